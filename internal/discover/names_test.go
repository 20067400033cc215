package discover

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestNamesAreUniqueLabels: names are RFC 1123 labels, never given twice
// in a scope (also against a name that looks like another's suffixed one,
// and past 63 characters), stable when asked again, and never one the
// cluster already has.
func TestNamesAreUniqueLabels(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b" + strings.Repeat("c", 40)
	for _, order := range [][]struct {
		base string
		id   int64
	}{
		{{"web", 3}, {"web-12", 5}, {"web", 12}},
		{{"web", 3}, {"web", 12}, {"web-12", 20}},
		{{slug(long, "t", 1), 1}, {slug(long, "t", 2), 2}, {slug(long+"x", "t", 3), 3}},
		{{"team-7", 2}, {slug("Ω", "team", 7), 7}},
	} {
		n := names{}
		seen := map[string]int64{}
		for _, o := range order {
			got := n.take("Team/ns", o.base, o.id, nil)
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("%q: %v", got, errs)
			}
			if prev, ok := seen[got]; ok {
				t.Errorf("%q given to %d and %d", got, prev, o.id)
			}
			seen[got] = o.id
			if again := n.take("Team/ns", o.base, o.id, nil); again != got {
				t.Errorf("not stable: %q then %q", got, again)
			}
		}
	}
	n := names{}
	if got := n.take("Team/ns", "web", 3, func(name string) bool { return name == "web" }); got != "web-3" {
		t.Errorf("web, which the cluster has: %q, want web-3", got)
	}
}
