package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/termtext"
	"github.com/effectivelabs/trellis/runtime/store"
)

// style is how a piece of text is shown on a terminal that takes colour:
// the parameters of an SGR escape (ESC [ params m); plain is none.
type style string

const (
	plain   style = ""
	heading style = "1"    // bold
	good    style = "32"   // green
	bad     style = "1;31" // bold red
	warning style = "33"   // yellow
	busy    style = "36"   // cyan
	waiting style = "2"    // faint
)

// statusStyle is the colour of a run's or step's status, or of a
// worker's state, wherever the CLI prints one.
func statusStyle(status string) style {
	switch status {
	case string(store.RunCompleted), string(store.WorkerAlive):
		return good
	case string(store.RunFailed), string(store.WorkerSilent):
		return bad
	case string(store.RunCancelled):
		return warning
	case string(store.RunRunning):
		return busy
	case string(store.TaskPending), string(store.TaskQueued), string(store.TaskSleeping),
		string(store.TaskRetrying), string(store.TaskWaiting), string(store.TaskSkipped):
		return waiting
	}
	return plain
}

// Colour modes, of the -color flag every command takes.
const (
	colourAuto   = "auto"   // on a terminal, unless NO_COLOR or TERM=dumb
	colourAlways = "always" // even when piped, and despite NO_COLOR
	colourNever  = "never"
)

// colourFlag is the value of -color: auto, always or never.
type colourFlag struct{ mode *string }

func (f colourFlag) String() string {
	if f.mode == nil {
		return colourAuto
	}
	return *f.mode
}

func (f colourFlag) Set(v string) error {
	switch v {
	case colourAuto, colourAlways, colourNever:
		*f.mode = v
		return nil
	}
	return fmt.Errorf("use %s, %s or %s", colourAuto, colourAlways, colourNever)
}

// output is what Main gives commands to write to, stdout or stderr. Text
// written to it passes through termtext, which escapes every control
// character, ESC included; when colour is on, writeStyled writes the
// CLI's own SGR escapes around text it has escaped the same way, so that
// no text from a user or a step can start an escape sequence.
type output struct {
	esc *termtext.Writer
	raw io.Writer
	// terminal is whether colour suits the stream in auto mode: it is a
	// terminal, NO_COLOR is unset or empty and TERM is not dumb.
	terminal bool
	// mode is the -color mode, shared by stdout and stderr.
	mode *string
}

func newOutput(w io.Writer, mode *string) *output {
	f, ok := w.(*os.File)
	terminal := ok && isTerminal(f) && colourWanted(os.Getenv)
	return &output{esc: termtext.NewWriter(w), raw: w, terminal: terminal, mode: mode}
}

// colourWanted reports whether the environment lets a terminal be shown
// colour: NO_COLOR is unset or empty (https://no-color.org) and TERM is
// not dumb.
func colourWanted(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// Write writes p escaped.
func (o *output) Write(p []byte) (int, error) { return o.esc.Write(p) }

// Flush writes what the escaper holds back (see termtext.Writer.Flush).
func (o *output) Flush() error { return o.esc.Flush() }

// colour reports whether styles are shown.
func (o *output) colour() bool {
	switch *o.mode {
	case colourAlways:
		return true
	case colourNever:
		return false
	}
	return o.terminal
}

// segment is a piece of output and its style.
type segment struct {
	text string
	st   style
}

// writeStyled writes segments to w, each escaped as termtext escapes
// text; in colour when w is an output with colour on.
func writeStyled(w io.Writer, segs ...segment) error {
	var b strings.Builder
	o, ok := w.(*output)
	if !ok || !o.colour() {
		for _, s := range segs {
			b.WriteString(s.text)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	if err := o.esc.Flush(); err != nil {
		return err
	}
	for _, s := range segs {
		if s.st == plain || s.text == "" {
			b.WriteString(termtext.Text(s.text))
			continue
		}
		b.WriteString("\x1b[" + string(s.st) + "m")
		b.WriteString(termtext.Text(s.text))
		b.WriteString("\x1b[0m")
	}
	_, err := io.WriteString(o.raw, b.String())
	return err
}

// writeHeading writes a line of text as a heading.
func writeHeading(w io.Writer, text string) error {
	return writeStyled(w, segment{text, heading}, segment{"\n", plain})
}
