package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
)

// HumanCount writes 10000 as "10k" and 2000000 as "2M".
func HumanCount(v float64) string {
	switch {
	case v >= 1e6 && int64(v)%1e5 == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3 && int64(v)%100 == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

// RatioCell prints r between mark (Markdown emphasis), or "-" when there is none.
func RatioCell(r float64, mark string) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%s%.3f%s", mark, r, mark)
}

// OrDash is s, or "-" for an empty cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// JoinErr adds the error text b to a, "; " between them.
func JoinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// ExitDetail adds the stderr of a failed command to its error.
func ExitDetail(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(bytes.TrimSpace(ee.Stderr)) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}
