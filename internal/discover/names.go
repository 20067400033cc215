package discover

import (
	"strconv"
	"strings"
)

// maxName is the longest name written: a namespace's (an RFC 1123 label),
// which also fits every other object's name.
const maxName = 63

// slug is name as an RFC 1123 label: lower case, every run of other
// characters one "-", trimmed, at most maxName long; prefix-<id> when
// nothing is left.
func slug(name, prefix string, id int64) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	s := b.String()
	if s == "" {
		return prefix + "-" + strconv.FormatInt(id, 10)
	}
	return trim(s, maxName)
}

func trim(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "-")
}

// names hands out names unique within a scope: the object with the lowest
// ID keeps its slug; a later one of the same slug gets "-<id>". Objects
// are taken in ID order, so a new object never renames an older one.
type names map[string]map[string]int64

// A name reserved (an MR already in the cluster has it) is never handed
// out.
func (n names) take(scope, base string, id int64, reserved func(string) bool) string {
	taken := n[scope]
	if taken == nil {
		taken = map[string]int64{}
		n[scope] = taken
	}
	name := base
	for i := 1; ; i++ {
		if owner, ok := taken[name]; (!ok || owner == id) && (reserved == nil || !reserved(name)) {
			break
		}
		// NOTE: IDs are unique, so "-<id>" collides only with an object
		// literally named so, taken first; then "-<id>-2", and so on.
		suffix := "-" + strconv.FormatInt(id, 10)
		if i > 1 {
			suffix += "-" + strconv.Itoa(i)
		}
		name = trim(base, maxName-len(suffix)) + suffix
	}
	taken[name] = id
	return name
}
