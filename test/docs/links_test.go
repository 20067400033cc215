// Package docs checks the repository's documentation: README.md and docs/.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// root is the repository, from this package's directory.
const root = "../.."

var (
	link    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	notWord = regexp.MustCompile(`[^\p{L}\p{N}\- ]`)
)

// TestRelativeLinksResolve: every relative link in README.md and docs/
// names a file of the repository, and every #anchor a heading of that file
// (as GitHub renders it).
func TestRelativeLinksResolve(t *testing.T) {
	pages := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages (README.md and docs/): want the user guide's", len(pages))
	}
	checked := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(text)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), file)
			}
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s links to %q: %v", rel(page), target, err)
				continue
			}
			if anchor == "" || info.IsDir() {
				continue
			}
			body, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(body))[anchor] {
				t.Errorf("%s links to %q: %s has no heading with the anchor %q", rel(page), target, rel(dest), anchor)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link was checked")
	}
}

// TestTheREADMEIsShort: the README says what the provider is, why, how to
// start and install it, and links into docs/ for everything else.
func TestTheREADMEIsShort(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > 250 {
		t.Errorf("README.md has %d lines: want at most 250 (move the detail into docs/)", n)
	}
}

// links returns the targets of the markdown links outside code blocks.
func links(text string) []string {
	var out []string
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors returns the anchors GitHub gives the headings of text.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		a := strings.ReplaceAll(notWord.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func rel(p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}
