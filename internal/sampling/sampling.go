// Package sampling reads how many spans a sampled span stands for: its adjusted count, from
// the OpenTelemetry `ot` vendor key of its W3C tracestate (`th`, the rejection threshold, and
// `rv`, explicit randomness), or from a sampling probability. It parses without allocating,
// because it runs for every span of the connector's hot path.
//
// https://opentelemetry.io/docs/specs/otel/trace/tracestate-probability-sampling/
package sampling // import "github.com/otelcol-red/otelcol-red/internal/sampling"

import (
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Status says what a tracestate or probability told about a span's adjusted count.
type Status uint8

const (
	// Absent: nothing to read (no `ot` key, or no `th` in it); the count is 1.
	Absent Status = iota
	// Valid: the count is the adjusted count read.
	Valid
	// Invalid: a `th` or `rv` was malformed, rv < th (the span cannot have passed the
	// sampler that set th: inconsistent), or a probability outside (0, 1]; the count is 1.
	Invalid
)

// numHexDigits is the width of thresholds and randomness: 56 bits.
const numHexDigits = 14

// maxAdjustedCount is 2^56, the number of randomness values.
const maxAdjustedCount = 1 << 56

// FromTraceState returns the adjusted count of a span whose W3C tracestate is ts: 1/p for
// the sampling probability p = 1 - T/2^56 of a valid `ot=th:T`, else 1.
func FromTraceState(ts string) (float64, Status) {
	ot, ok := otValue(ts)
	if !ok {
		return 1, Absent
	}
	var th, rv string
	hasTh, hasRv := false, false
	for len(ot) > 0 {
		var field string
		field, ot = cut(ot, ';')
		switch {
		case len(field) >= 3 && field[:3] == "th:":
			th, hasTh = field[3:], true
		case len(field) >= 3 && field[:3] == "rv:":
			rv, hasRv = field[3:], true
		}
	}
	if !hasTh {
		return 1, Absent
	}
	if len(th) == 0 || len(th) > numHexDigits {
		return 1, Invalid
	}
	t, ok := parseHex(th)
	if !ok {
		return 1, Invalid
	}
	// Trailing zeros are omitted from th: "8" is 0x80000000000000.
	t <<= 4 * (numHexDigits - len(th))
	if hasRv {
		if len(rv) != numHexDigits {
			return 1, Invalid
		}
		r, ok := parseHex(rv)
		if !ok || r < t {
			return 1, Invalid
		}
	}
	return ThresholdCount(t), Valid
}

// ThresholdCount is the adjusted count of rejection threshold t (out of 2^56): 1/p with
// p = (2^56 - t)/2^56, computed as the contrib sampling package does, so both agree to the bit.
func ThresholdCount(t uint64) float64 {
	return maxAdjustedCount / float64(maxAdjustedCount-t)
}

// FromProbability returns 1/p for a sampling probability p in (0, 1], else 1 and Invalid.
func FromProbability(p float64) (float64, Status) {
	if !(p > 0 && p <= 1) { // NaN fails both
		return 1, Invalid
	}
	return 1 / p, Valid
}

// FromAttribute is FromProbability of an attribute's value, as the connectors read
// sampling.attribute (Tempo's span_multiplier_key): a double, an int or a string that parses as
// a number. Any other value, or a probability outside (0, 1], counts 1 and is Invalid.
func FromAttribute(v traceview.Val) (float64, Status) {
	var p float64
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		p = v.Double()
	case pcommon.ValueTypeInt:
		p = float64(v.Int())
	case pcommon.ValueTypeStr:
		var err error
		if p, err = strconv.ParseFloat(v.Str(), 64); err != nil {
			return 1, Invalid
		}
	default:
		return 1, Invalid
	}
	return FromProbability(p)
}

// otValue returns the value of the `ot` list member of tracestate ts. Members are separated
// by commas with optional spaces or tabs around them (W3C trace context, "list"). It looks
// for "ot=" with strings.Index and checks that a member starts there, rather than splitting
// the list byte by byte: this runs for every span that carries a tracestate.
func otValue(ts string) (string, bool) {
	for i := 0; i < len(ts); {
		j := strings.Index(ts[i:], "ot=")
		if j < 0 {
			return "", false
		}
		j += i
		i = j + 3
		k := j
		for k > 0 && (ts[k-1] == ' ' || ts[k-1] == '\t') {
			k--
		}
		if k > 0 && ts[k-1] != ',' {
			continue // inside another member: "xot=…", "a=ot=…"
		}
		v := ts[j+3:]
		if e := strings.IndexByte(v, ','); e >= 0 {
			v = v[:e]
		}
		for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
			v = v[:len(v)-1]
		}
		return v, true
	}
	return "", false
}

// cut splits s at the first sep; strings.Cut without the found flag.
func cut(s string, sep byte) (before, after string) {
	if i := strings.IndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// hexValue maps a byte to its hex digit value, 0xff when it is none; either case is accepted,
// as strconv.ParseUint(s, 16, 64), which the contrib parser uses, accepts them.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

// parseHex parses 1 to 16 hex digits, without a prefix or sign.
func parseHex(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := hexValue[s[i]]
		if d == 0xff {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// Round is the carried-remainder rounding of weighted counts to integers: the integer
// counts emitted for a series add up to the floor of its running weighted total, so they
// never drift from it by 1 or more, are exact for integer weights, and depend only on the
// order of the spans (deterministic, no random numbers). carry is the series' remainder in
// [0, 1); Round adds w to it and returns the integer part taken out.
func Round(carry *float64, w float64) uint64 {
	c := *carry + w
	k := math.Floor(c)
	*carry = c - k
	return uint64(k)
}
