package golang

import (
	"flag"
	"strings"
	"testing"
)

// update is accepted so that go test ./gen/... -update works; this
// package's tests have no goldens of their own.
var _ = flag.Bool("update", false, "no effect in this package")

func TestGoName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"order-processing", "OrderProcessing"},
		{"orderId", "OrderID"},
		{"order_id", "OrderID"},
		{"orderIds", "OrderIDs"},
		{"userIDs", "UserIDs"},
		{"HTTPServer", "HTTPServer"},
		{"httpCallbackURL", "HTTPCallbackURL"},
		{"labelUrl", "LabelURL"},
		{"apiKey", "APIKey"},
		{"EXPRESS_SHIPPING", "ExpressShipping"},
		{"EXPRESS", "Express"},
		{"NL", "NL"},
		{"sha256Sum", "Sha256Sum"},
		{"same-day", "SameDay"},
		{"isValid", "IsValid"},
		{"a-1", "A1"},
		{"a1", "A1"},
		{"3d", "3d"},
		{"---", ""},
		{"größe", "Größe"},
	}
	for _, tt := range tests {
		if got := goName(tt.in); got != tt.want {
			t.Errorf("goName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFieldNameIsExported(t *testing.T) {
	tests := map[string]string{"3d": "X3d", "orderId": "OrderID", "---": ""}
	for in, want := range tests {
		if got := fieldName(in); got != want {
			t.Errorf("fieldName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnexported(t *testing.T) {
	tests := map[string]string{
		"OrderProcessing": "orderProcessing", "APISync": "apiSync", "ID": "id", "A1": "a1", "X": "x",
	}
	for in, want := range tests {
		if got := unexported(in); got != want {
			t.Errorf("unexported(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidTagName(t *testing.T) {
	tests := map[string]bool{
		"orderId": true, "x-request-id": true, "a b": true, "$ref": true, "größe": true,
		"": false, "a,b": false, `a"b`: false, "a\\b": false, "a`b": false,
	}
	for in, want := range tests {
		if got := validTagName(in); got != want {
			t.Errorf("validTagName(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestWrap(t *testing.T) {
	long := "OrderProcessingSteps is the code of the order-processing workflow: one method per step that runs code."
	lines := wrap(long, 40)
	for _, l := range lines {
		if len(l) > 40 {
			t.Errorf("line %q is longer than 40", l)
		}
	}
	if len(lines) < 3 {
		t.Errorf("wrap gave %d lines, want at least 3", len(lines))
	}
	if got := wrap("  preformatted line that is long enough to need wrapping at forty", 40); len(got) != 1 {
		t.Errorf("an indented line was wrapped: %q", got)
	}
}

func TestFormatFailureQuotesTheLine(t *testing.T) {
	src := []byte("package p\n\nfunc f() {\n\treturn 1 +\n}\n")
	_, err := formatSource("x.yaml", src)
	if err == nil {
		t.Fatal("formatSource accepted broken code")
	}
	for _, want := range []string{"x.yaml", "a bug in trellis", "| }"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestGroupImports(t *testing.T) {
	src := "package p\n\nimport (\n\t\"context\"\n\t\"github.com/x/y\"\n\t\"time\"\n)\n"
	want := "package p\n\nimport (\n\t\"context\"\n\t\"time\"\n\n\t\"github.com/x/y\"\n)\n"
	if got := string(groupImports([]byte(src))); got != want {
		t.Errorf("groupImports =\n%s\nwant\n%s", got, want)
	}
}
