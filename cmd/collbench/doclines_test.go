package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docLine is one collbench command line that README.md or docs/ shows.
type docLine struct {
	file string
	line int
	args []string // after "collbench"
}

var (
	inlineCommand = regexp.MustCompile("`(collbench [^`]+)`")
	blockCommand  = regexp.MustCompile(`^\s*(?:\$\s+)?(collbench\s.*)$`)
	// placeholder is a word that stands for a value the reader supplies
	// (N, FILE, SPEC, <collective>, [flags], …).
	placeholder = regexp.MustCompile(`^(?:[A-Z][A-Z0-9_,=:.|/-]*|.*[…<>\[\]{}].*|[a-z]+=…)$`)
)

// docLines reads every collbench command line of README.md and docs/*.md:
// in code blocks (fenced or indented, with or without a "$ " prompt) and
// in inline code.
func docLines(t *testing.T) []docLine {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	var out []docLine
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		fenced := false
		for n := 1; sc.Scan(); n++ {
			text := sc.Text()
			if strings.HasPrefix(strings.TrimSpace(text), "```") {
				fenced = !fenced
				continue
			}
			var cands []string
			if fenced || strings.HasPrefix(text, "    ") {
				if m := blockCommand.FindStringSubmatch(text); m != nil {
					cands = append(cands, m[1])
				}
			}
			for _, m := range inlineCommand.FindAllStringSubmatch(text, -1) {
				cands = append(cands, m[1])
			}
			for _, c := range cands {
				args, ok := shellWords(c)
				// Output that names the command ("collbench profile:
				// wrote …") is no command line, and a fragment that ends
				// on a flag would take the --help below as its value.
				if !ok || len(args) < 2 || strings.HasSuffix(args[1], ":") || strings.HasPrefix(args[len(args)-1], "-") {
					continue
				}
				out = append(out, docLine{file: filepath.Base(f), line: n, args: args[1:]})
			}
		}
		fh.Close()
	}
	return out
}

// shellWords splits a command line as a shell would, up to the first
// pipe, redirection, separator or continuation; false when it holds a
// placeholder, a variable or a substitution, which only a reader fills in.
func shellWords(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	quote := byte(0)
	in := false
	flush := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			flush()
		case strings.IndexByte("|;&><\\", c) >= 0:
			flush()
			return words, checkWords(words)
		case c == '$' || c == '`':
			return nil, false
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words, quote == 0 && checkWords(words)
}

func checkWords(words []string) bool {
	return !slices.ContainsFunc(words, placeholder.MatchString)
}

// Every collbench command line README.md and docs/ show parses: each flag
// it names exists on its command (and on the command a launch, ab or tune
// line runs), with a value of the flag's kind. (Checked by parsing the
// line with --help added, which ends the command before it runs.)
func TestDocCommandLinesParse(t *testing.T) {
	lines := docLines(t)
	if len(lines) < 80 {
		t.Fatalf("found %d command lines in README.md and docs/; the scan is broken", len(lines))
	}
	t.Logf("%d command lines", len(lines))
	for _, l := range lines {
		for _, part := range commandParts(l.args) {
			code, _, errOut := runCLI(append(slices.Clone(part), "--help")...)
			if code != exitOK {
				t.Errorf("%s:%d: collbench %s: %s", l.file, l.line, strings.Join(l.args, " "), strings.TrimSpace(errOut))
			}
		}
	}
}

// commandParts are the command lines a documented line holds: itself, or
// for launch, ab and tune their own flags and the command they run.
func commandParts(args []string) [][]string {
	switch args[0] {
	case "ab", "tune":
		if i := slices.Index(args, "--"); i > 0 && i+1 < len(args) {
			return [][]string{args[:i], args[i+1:]}
		}
	case "launch":
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "--":
				return [][]string{args[:i], args[i+1:]}
			case a == "-n" || a == "--nprocs" || a == "--rendezvous" || a == "--grace":
				i++
			case strings.HasPrefix(a, "-"):
			default:
				return [][]string{args[:i], args[i:]}
			}
		}
	case "help", "version":
		return nil
	}
	return [][]string{args}
}
