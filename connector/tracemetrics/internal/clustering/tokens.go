package clustering // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"

// A name is read as a sequence of edges: a run of separators followed by a word (a run of
// anything else). "GET /orders/12345" is "GET", " /orders", "/12345"; a trailing separator is
// an edge with an empty word. The edges are the positions of the template tree (tree.go), and
// words are what the heuristics below and the tree's merges replace; separators are kept.

// Placeholders written in place of a word.
const (
	// ID replaces a word that looks like an identifier (isID) wherever it appears.
	ID = "{id}"
	// Wildcard replaces a word at a position of the tree that had more than max_children
	// distinct words (tree.go).
	Wildcard = "{*}"
)

// separators delimit words. '.', '-' and '_' are not among them: they join the parts of one
// word (a file name, a UUID, a dotted RPC method); '{' and '}' neither, so a placeholder is a
// word of its own.
var separators = func() (t [256]bool) {
	for _, c := range []byte(" \t/\\:?&=,;#@|()[]<>\"'") {
		t[c] = true
	}
	return t
}()

// classes has, per byte, classSep for separators and classDigit for decimal digits: the
// producers' scan (Clusterer.Template) reads one table per byte.
var classes = func() (t [256]byte) {
	for c := range t {
		if separators[c] {
			t[c] |= classSep
		}
		if isDigit(byte(c)) {
			t[c] |= classDigit
		}
	}
	return t
}()

const (
	classSep = 1 << iota
	classDigit
)

// nextEdge splits the edge of name that starts at i: separator run [i, w), word [w, end).
func nextEdge(name string, i int) (w, end int) {
	w = i
	for w < len(name) && separators[name[w]] {
		w++
	}
	end = w
	for end < len(name) && !separators[name[end]] {
		end++
	}
	return w, end
}

// Lengths from which a word of hex digits, or of base64 characters, is taken for an ID.
const (
	minHexID    = 8
	minBase64ID = 16
)

// isID reports whether word is an identifier, replaced by ID at once, without learning. Each
// kind has a decimal digit (a UUID without one is left to chance: (6/16)^32), which the
// caller may check first:
//
//   - a number: digits, possibly with '.' between them and a leading sign ("12345", "3.5",
//     "10.0.0.1");
//   - a UUID: 8-4-4-4-12 hex digits;
//   - a hex id: at least minHexID hex digits, one of them a decimal digit ("5f2a9c1e" but not
//     "deadbeef", which may be a word);
//   - a base64-ish id: at least minBase64ID characters of the base64 and base64url
//     alphabets, with upper and lower case letters and digits in at least two separate runs
//     ("dGhpcyBpcyBhIHRva2Vu7x9", not "getUserById2024Handler").
//
// It allocates nothing.
func isID(word string) bool {
	if len(word) == 0 {
		return false
	}
	return isNumber(word) || isUUID(word) || isHexID(word) || isBase64ID(word)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isNumber(w string) bool {
	if w[0] == '-' || w[0] == '+' {
		w = w[1:]
	}
	if len(w) == 0 || !isDigit(w[0]) || !isDigit(w[len(w)-1]) {
		return false
	}
	for i := 1; i < len(w)-1; i++ {
		if !isDigit(w[i]) && (w[i] != '.' || w[i+1] == '.') {
			return false
		}
	}
	return true
}

func isUUID(w string) bool {
	if len(w) != 36 {
		return false
	}
	digit := false
	for i := 0; i < len(w); i++ {
		digit = digit || isDigit(w[i])
		switch i {
		case 8, 13, 18, 23:
			if w[i] != '-' {
				return false
			}
		default:
			if !isHex(w[i]) {
				return false
			}
		}
	}
	return digit
}

func isHexID(w string) bool {
	if len(w) < minHexID {
		return false
	}
	digit := false
	for i := 0; i < len(w); i++ {
		if !isHex(w[i]) {
			return false
		}
		digit = digit || isDigit(w[i])
	}
	return digit
}

func isBase64ID(w string) bool {
	if len(w) < minBase64ID {
		return false
	}
	var upper, lower bool
	runs := 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case isDigit(c):
			if i == 0 || !isDigit(w[i-1]) {
				runs++
			}
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case c == '+' || c == '-' || c == '_' || c == '=' || c == '.' || c == '~':
		default:
			return false
		}
	}
	return upper && lower && runs >= 2
}

// wildcardEdge returns edge with its word replaced by Wildcard; an edge without a word is
// kept.
func wildcardEdge(edge string) string {
	w, _ := nextEdge(edge, 0)
	if w == len(edge) {
		return edge
	}
	return edge[:w] + Wildcard
}
