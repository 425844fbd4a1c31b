package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// helpGroups sort a command's flags for its help, in this order: the
// job's place and backend, then what it writes. A collective's other
// flags split into nccl-tests' own (each has nccl-tests' letter) and
// collbench's additions; another command's are its own flags.
var helpGroups = []struct {
	title string
	names []string
}{
	{"Job and backend", []string{"backend", "nccl-lib", "transport", "devices", "rendezvous"}},
	{"Output", []string{"output_file", "output", "format", "quiet", "otlp-endpoint", "heatmap", "json"}},
}

// helpWidth is the width help wraps to: the terminal's where standard
// output is one, else $COLUMNS, else 80.
func helpWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols >= 40 {
			return cols
		}
	}
	if cols, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && cols >= 40 {
		return cols
	}
	return 80
}

// writeHelp prints a command's usage and its flags in groups, each wrapped
// to cols: the command's own flags first (a collective's split into
// nccl-tests' own, which have its letters, and collbench's additions),
// then helpGroups'.
func writeHelp(w io.Writer, synopsis string, fs *pflag.FlagSet, collective bool, cols int) {
	fmt.Fprintf(w, "Usage: %s\n", synopsis)
	groupOf := func(f *pflag.Flag) string {
		for _, g := range helpGroups {
			if slices.Contains(g.names, f.Name) {
				return g.title
			}
		}
		switch {
		case !collective:
			return "Flags"
		case f.Shorthand != "":
			return "nccl-tests' flags"
		}
		return "collbench's additions"
	}
	titles := []string{"Flags", "nccl-tests' flags", "collbench's additions"}
	for _, g := range helpGroups {
		titles = append(titles, g.title)
	}
	for _, title := range titles {
		sub := pflag.NewFlagSet(title, pflag.ContinueOnError)
		sub.SortFlags = false
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && groupOf(f) == title {
				sub.AddFlag(f)
			}
		})
		if sub.HasFlags() {
			fmt.Fprintf(w, "\n%s:\n", title)
			flagUsages(w, sub, cols)
		}
	}
}

// flagUsages writes each flag of fs as "  -x, --name type" and its usage
// (with its default, where it has one worth saying) wrapped to cols: in a
// column beside the names where that leaves room, else on lines of its
// own under them.
func flagUsages(w io.Writer, fs *pflag.FlagSet, cols int) {
	type entry struct{ names, usage string }
	var entries []entry
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		varname, usage := pflag.UnquoteUsage(f)
		names := "      --" + f.Name
		if f.Shorthand != "" {
			names = "  -" + f.Shorthand + ", --" + f.Name
		}
		if varname != "" {
			names += " " + varname
		}
		if d := defaultText(f); d != "" {
			usage += " (default " + d + ")"
		}
		entries = append(entries, entry{names, usage})
		width = max(width, len([]rune(names)))
	})
	column := width + 3
	for _, e := range entries {
		if cols-column >= 30 {
			lines := wrapWords(e.usage, cols-column)
			fmt.Fprintf(w, "%-*s%s\n", column, e.names, lines[0])
			for _, l := range lines[1:] {
				fmt.Fprintf(w, "%*s%s\n", column, "", l)
			}
			continue
		}
		fmt.Fprintf(w, "%s\n", e.names)
		for _, l := range wrapWords(e.usage, cols-10) {
			fmt.Fprintf(w, "%10s%s\n", "", l)
		}
	}
}

// defaultText is a flag's default as its help shows it; "" for a zero
// value, which goes without saying.
func defaultText(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "[]", "0s":
		return ""
	}
	if f.Value.Type() == "string" {
		return strconv.Quote(f.DefValue)
	}
	return f.DefValue
}

// wrapWords breaks text into lines of at most width runes at spaces (a
// word longer than width stands alone on its line).
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}
