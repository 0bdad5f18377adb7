package gen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
)

// fuzzSeeds are every golden workflow plus snippets that are broken in
// ways the goldens are not.
func fuzzSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(goldenRoot, "*", "*.y*ml"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no golden workflows to seed from: %v", err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, s := range []string{
		"", "---", "~", "[]", "{}", "steps:", "name: x\nsteps: 5", "&a [*a]", "a: &a {b: *a}",
		"name: x\ninput: {type: object}\nsteps: [{name: a, parents: [a]}]",
		"name: x\ninput: {type: object, $defs: {a: {$ref: '#/$defs/a'}}}\nsteps: [{name: a}]",
		"name: x\ninput: {type: object}\nsteps: [{name: a, skipIf: ['\\u00e9 =='], output: {type: object, properties: {'': {type: string}}}}]",
		"name: x\ninput: {type: object, properties: {a: {type: array, items: {type: array, items: {type: object, properties: {b: {enum: ['', x]}}}}}}}\nsteps: [{name: a}]",
		"name: x\ninput: {type: object}\nsteps:\n  - name: a\n    skipIf:\n      - |\n        input\n",
		"\t", "name: [", "? [a]\n: b", "<<: {a: 1}", "x: !!binary aGk=", "x: .nan", "x: 0x10",
	} {
		f.Add([]byte(s))
	}
}

// FuzzParse feeds arbitrary bytes to the parser: it must never panic, and
// every problem it reports must have a position and a message.
func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	g := newGenerator(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		_, problems := g.parser.Parse("fuzz.yaml", src)
		for _, p := range problems {
			if p.Line < 1 || p.Column < 1 || p.Message == "" {
				t.Errorf("malformed problem %+v", p)
			}
		}
	})
}

// FuzzLint checks the promise lint makes: a file it finds nothing wrong
// with generates Go code that gofmt and the Go parser accept, and a spec
// the runtime compiles.
func FuzzLint(f *testing.F) {
	fuzzSeeds(f)
	g := newGenerator(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		file := g.Check("fuzz.yaml", src)
		if len(file.Problems) > 0 {
			return
		}
		if _, err := GenerateFile(file, "fuzz"); err != nil {
			t.Fatalf("lint-clean file does not generate: %v\n%s", err, src)
		}
		if _, err := runtime.Compile(file.Spec()); err != nil {
			t.Fatalf("lint-clean file gives a spec the runtime rejects: %v\n%s", err, src)
		}
	})
}
