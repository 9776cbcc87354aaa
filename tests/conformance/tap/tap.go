// SPDX-License-Identifier: Apache-2.0

// Package tap writes the Test Anything Protocol (version 13) for the OCI
// runtime-tools validation suite, in the place of github.com/mndrix/tap-go,
// which the suite imports and Debian does not package
// (tests/conformance/fetch.sh builds the suite with this package at that
// import path).  Only what the suite calls: a numbered test point a line
// (`ok N - what`, `not ok N - what`), skips and TODO points as TAP marks
// them, diagnostics as `# ` lines, YAML blocks indented under their point,
// and the plan (`1..N`) first or, with AutoPlan, last.
package tap

import (
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v2"
)

// T is one TAP stream; a Todo view shares its counter.
type T struct {
	count  *int
	todo   bool
	Writer io.Writer
}

// New writes to standard output.
func New() *T {
	return &T{count: new(int), Writer: os.Stdout}
}

func (t *T) printf(format string, a ...interface{}) {
	fmt.Fprintf(t.Writer, format, a...)
}

// Header starts the stream; a plan of n points when n > 0.
func (t *T) Header(n int) {
	t.printf("TAP version 13\n")
	if n > 0 {
		t.printf("1..%d\n", n)
	}
}

// Ok writes the next point: passed when ok.
func (t *T) Ok(ok bool, description string) {
	*t.count++
	line := "ok"
	if !ok {
		line = "not ok"
	}
	line = fmt.Sprintf("%s %d", line, *t.count)
	if description != "" {
		line += " - " + oneLine(description)
	}
	if t.todo {
		line += " # TODO"
	}
	t.printf("%s\n", line)
}

// Pass is Ok(true, description).
func (t *T) Pass(description string) { t.Ok(true, description) }

// Fail is Ok(false, description).
func (t *T) Fail(description string) { t.Ok(false, description) }

// Skip writes n points skipped for the reason description.
func (t *T) Skip(n int, description string) {
	for i := 0; i < n; i++ {
		*t.count++
		t.printf("ok %d # SKIP %s\n", *t.count, oneLine(description))
	}
}

// Todo is a view of t whose points are marked TODO.
func (t *T) Todo() *T {
	return &T{count: t.count, todo: true, Writer: t.Writer}
}

// Count is the number of points written.
func (t *T) Count() int { return *t.count }

// AutoPlan writes the plan for the points written (the last line).
func (t *T) AutoPlan() {
	t.printf("1..%d\n", *t.count)
}

// Diagnostic writes message as comment lines.
func (t *T) Diagnostic(message string) {
	for _, l := range strings.Split(strings.TrimRight(message, "\n"), "\n") {
		t.printf("# %s\n", l)
	}
}

// Diagnosticf is Diagnostic of a formatted message.
func (t *T) Diagnosticf(format string, a ...interface{}) {
	t.Diagnostic(fmt.Sprintf(format, a...))
}

// YAML writes v as a YAML block under the last point.
func (t *T) YAML(v interface{}) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	t.printf("  ---\n")
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		t.printf("  %s\n", l)
	}
	t.printf("  ...\n")
	return nil
}

// oneLine keeps a description on its point's line.
func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", " ")
}
