// Package docs_test keeps the documentation honest: every relative link
// in README.md and docs/ leads to a file (and, for a Markdown page, to a
// heading), the README stays short, and every make target says what it
// does. The Quick start and the README's graph are tested in package gen
// (e2e_test.go, readme_test.go).
package docs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines bounds README.md: it is the front page (what Trellis
// is, how to set up, the two quick starts, links); the manual is docs/.
const maxReadmeLines = 500

// TestLinks checks every relative link and image of README.md and
// docs/**/*.md: the file must exist, and an anchor (#heading) must name a
// heading of the Markdown page it points into, as GitHub spells them. It
// also checks that every page of docs/ is linked from another page, so
// that none is out of reach.
func TestLinks(t *testing.T) {
	pages := markdownPages(t)
	anchors := map[string]map[string]bool{} // page -> its headings' anchors
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := headingAnchors(readFile(t, page))
		anchors[page] = a
		return a
	}
	linked := map[string]bool{} // pages some other page links to
	for _, page := range pages {
		for _, l := range links(readFile(t, page)) {
			if err := checkLink(page, l.target, anchorsOf); err != nil {
				t.Errorf("%s:%d: link %s: %v", page, l.line, l.target, err)
			}
			if u, err := url.Parse(l.target); err == nil && u.Scheme == "" && u.Path != "" {
				if dest := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), u.Path))); dest != page {
					linked[dest] = true
				}
			}
		}
	}
	for _, page := range pages {
		if page != "README.md" && !linked[page] {
			t.Errorf("%s: no page links to it; link it from docs/README.md or the page it belongs under", page)
		}
	}
}

// TestReadmeLength keeps README.md a front page.
func TestReadmeLength(t *testing.T) {
	n := bytes.Count(readFile(t, "README.md"), []byte("\n"))
	if n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail into a page of docs/ and link to it", n, maxReadmeLines)
	}
}

// TestMakeHelp runs make help, which fails when a target has no
// "## target: description" comment, and checks that it lists every
// target of the Makefile.
func TestMakeHelp(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	cmd := exec.Command("make", "--no-print-directory", "help")
	cmd.Dir = ".."
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make help: %v\n%s", err, stderr.String())
	}
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		name, desc, _ := strings.Cut(strings.TrimSpace(line), " ")
		listed[name] = strings.TrimSpace(desc)
	}
	target := regexp.MustCompile(`^([A-Za-z0-9_-]+):([^=]|$)`)
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, "Makefile")))
	for n := 1; sc.Scan(); n++ {
		m := target.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if desc, ok := listed[m[1]]; !ok || desc == "" {
			t.Errorf("Makefile:%d: target %s is missing from make help, or has no description:\n%s", n, m[1], stdout.String())
		}
	}
}

// TestWorkflowFieldPages checks that every field of the workflow file
// format, at the top level and on a step (schema/workflow.schema.json),
// has its reference page, docs/reference/workflow/<field>.md.
func TestWorkflowFieldPages(t *testing.T) {
	var format struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(readFile(t, "schema/workflow.schema.json"), &format); err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{}
	for name := range format.Properties {
		fields[name] = true
	}
	for name := range format.Defs["step"].Properties {
		fields[name] = true
	}
	if len(fields) < 20 {
		t.Fatalf("found %d fields in schema/workflow.schema.json; has its layout changed?", len(fields))
	}
	for name := range fields {
		page := "reference/workflow/" + name + ".md"
		if _, err := os.Stat(filepath.FromSlash(page)); err != nil {
			t.Errorf("the workflow field %s has no reference page: write docs/%s and link it from docs/reference/workflow/README.md", name, page)
		}
	}
}

// markdownPages returns README.md and every .md file under docs/, as
// paths relative to the repository's root, with forward slashes.
func markdownPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, "docs/"+filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// readFile reads a file named relative to the repository's root.
func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type link struct {
	line   int
	target string
}

var (
	linkPattern = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan    = regexp.MustCompile("`[^`]*`")
)

// links returns the inline links and images of a Markdown page, outside
// code blocks and code spans.
func links(md []byte) []link {
	var out []link
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{line: n, target: m[1]})
		}
	}
	return out
}

// checkLink checks one link of page (relative to the repository's root).
// Links with a scheme (https:, mailto:) are not followed.
func checkLink(page, target string, anchorsOf func(page string) map[string]bool) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if u.Scheme != "" || u.Host != "" {
		return nil
	}
	dest := page
	if u.Path != "" {
		dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), u.Path)))
		if strings.HasPrefix(dest, "../") {
			return errors.New("leads outside the repository")
		}
		info, err := os.Stat(filepath.Join("..", filepath.FromSlash(dest)))
		switch {
		case err != nil:
			return fmt.Errorf("%s does not exist", dest)
		case info.IsDir() && u.Fragment != "":
			return fmt.Errorf("%s is a directory, which has no anchors", dest)
		case info.IsDir():
			return nil
		}
	}
	if u.Fragment == "" || !strings.HasSuffix(dest, ".md") {
		return nil
	}
	if !anchorsOf(dest)[u.Fragment] {
		return fmt.Errorf("%s has no heading with the anchor #%s", dest, u.Fragment)
	}
	return nil
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown page: the heading's text in lower case, without punctuation
// (except - and _), spaces as -, and -1, -2, ... after repeats.
func headingAnchors(md []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if text == "" || text[0] != ' ' {
			continue
		}
		a := slug(text)
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

var inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func slug(heading string) string {
	heading = inlineLink.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
