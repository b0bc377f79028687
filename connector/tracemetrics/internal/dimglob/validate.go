package dimglob // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/dimglob"

import (
	"fmt"

	"github.com/gobwas/glob"
)

// Entry is one entry of a dimensions list as a configuration writes it.
type Entry struct {
	Name, Glob string
	HasDefault bool
}

// ValidateList checks one dimensions list as spanmetrics does: each entry sets exactly one of
// name and glob, a glob has no default and compiles, a name is not empty and repeats neither a
// built-in attribute nor another name of the list, and no glob matches a built-in attribute or
// a name of the list. Names must not repeat shared, the names of the list every family has,
// either (spanmetrics accepts that; the attribute would be written twice).
func ValidateList(list []Entry, builtin, shared []string) error {
	seen := make(map[string]struct{}, len(list)+len(builtin)+len(shared))
	for _, k := range builtin {
		seen[k] = struct{}{}
	}
	for _, k := range shared {
		seen[k] = struct{}{}
	}
	var names []string
	type compiled struct {
		pattern string
		g       glob.Glob
	}
	var globs []compiled
	for i, d := range list {
		switch {
		case d.Name != "" && d.Glob != "":
			return fmt.Errorf("entry %d sets both name %q and glob %q: set one of them", i, d.Name, d.Glob)
		case d.Glob != "":
			if d.HasDefault {
				return fmt.Errorf("entry %d: default is not supported with glob %q", i, d.Glob)
			}
			g, err := Compile(d.Glob)
			if err != nil {
				return fmt.Errorf("entry %d: invalid glob %q: %w", i, d.Glob, err)
			}
			globs = append(globs, compiled{d.Glob, g})
		case d.Name == "":
			return fmt.Errorf("entry %d sets neither name nor glob", i)
		default:
			if _, ok := seen[d.Name]; ok {
				return fmt.Errorf("duplicate dimension name %s", d.Name)
			}
			seen[d.Name] = struct{}{}
			names = append(names, d.Name)
		}
	}
	for _, g := range globs {
		for _, k := range builtin {
			if g.g.Match(k) {
				return fmt.Errorf("glob %q matches the built-in attribute %s", g.pattern, k)
			}
		}
		for _, k := range names {
			if g.g.Match(k) {
				return fmt.Errorf("glob %q matches %s, a name of the same list", g.pattern, k)
			}
		}
	}
	return nil
}
