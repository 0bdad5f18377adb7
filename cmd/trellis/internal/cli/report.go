package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/effectivelabs/trellis/gen"
)

// formatter returns the way lint prints problems for a -format name.
func formatter(name string) (func(io.Writer, []gen.Problem) error, bool) {
	switch name {
	case "text":
		return writeText, true
	case "json":
		return writeJSON, true
	case "github":
		return writeGitHub, true
	}
	return nil, false
}

// writeText prints one problem per line as file:line:col: message, the
// form editors and compilers use; in colour, the position is bold and the
// message red, as compilers show errors.
func writeText(w io.Writer, problems []gen.Problem) error {
	var segs []segment
	for _, p := range problems {
		line := p.String()
		pos := fmt.Sprintf("%s:%d:%d:", p.File, p.Line, p.Column)
		if msg, ok := strings.CutPrefix(line, pos+" "); ok {
			segs = append(segs, segment{pos, heading}, segment{" ", plain}, segment{msg, bad}, segment{"\n", plain})
		} else {
			segs = append(segs, segment{line + "\n", plain})
		}
	}
	return writeStyled(w, segs...)
}

// jsonProblem is the JSON form of a problem.
type jsonProblem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
	// Severity is "note" for a note (a change lint -against was told to
	// accept), absent for a problem.
	Severity string `json:"severity,omitempty"`
}

// writeJSON prints the problems as a JSON array ([] when there are none).
func writeJSON(w io.Writer, problems []gen.Problem) error {
	return writeJSONNotes(w, problems, nil)
}

// notesWriter returns the writer of format name for problems and notes:
// what lint -against prints, where accepted changes are notes.
func notesWriter(name string) func(io.Writer, []gen.Problem, []gen.Problem) error {
	switch name {
	case "json":
		return writeJSONNotes
	case "github":
		return func(w io.Writer, problems, notes []gen.Problem) error {
			if err := writeGitHub(w, problems); err != nil {
				return err
			}
			var b strings.Builder
			for _, p := range notes {
				fmt.Fprintf(&b, "::notice file=%s,line=%d,col=%d::%s\n",
					escapeProperty(p.File), p.Line, p.Column, escapeData(p.Message))
			}
			_, err := io.WriteString(w, b.String())
			return err
		}
	}
	return func(w io.Writer, problems, notes []gen.Problem) error {
		if err := writeText(w, problems); err != nil {
			return err
		}
		var segs []segment
		for _, p := range notes {
			segs = append(segs, segment{fmt.Sprintf("%s:%d:%d:", p.File, p.Line, p.Column), heading},
				segment{" note: " + p.Message + "\n", plain})
		}
		return writeStyled(w, segs...)
	}
}

// writeJSONNotes prints problems, then notes, as one JSON array.
func writeJSONNotes(w io.Writer, problems, notes []gen.Problem) error {
	out := make([]jsonProblem, 0, len(problems)+len(notes))
	for _, p := range problems {
		out = append(out, jsonProblem{File: p.File, Line: p.Line, Column: p.Column, Message: p.Message})
	}
	for _, p := range notes {
		out = append(out, jsonProblem{File: p.File, Line: p.Line, Column: p.Column, Message: p.Message, Severity: "note"})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// writeGitHub prints GitHub Actions workflow commands, which GitHub shows
// as annotations on the offending lines of a pull request.
func writeGitHub(w io.Writer, problems []gen.Problem) error {
	var b strings.Builder
	for _, p := range problems {
		fmt.Fprintf(&b, "::error file=%s,line=%d,col=%d::%s\n",
			escapeProperty(p.File), p.Line, p.Column, escapeData(p.Message))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escapeData escapes the message of a workflow command the way the
// GitHub Actions toolkit does.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a property value of a workflow command, which
// must also not contain the ':' and ',' that delimit properties.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
