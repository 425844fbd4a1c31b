package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
)

// registration matches pflag's methods that define a flag: Int, IntVar,
// IntVarP, StringArrayVar, Var, VarP and their kin.
var registration = regexp.MustCompile(`^(Bool|Int|Int64|Uint|Float64|String|StringSlice|StringArray|Duration|Count|IntSlice|Var|Func)(Var)?(P)?$`)

// ourFlags are the long names and shorthands the command line registers,
// read from its source.
func ourFlags(t *testing.T) (long, short map[string]bool) {
	t.Helper()
	long, short = map[string]bool{}, map[string]bool{}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			m := registration.FindStringSubmatch(sel.Sel.Name)
			if m == nil {
				return true
			}
			i := 0
			if m[2] != "" || m[1] == "Var" {
				i = 1 // the value's pointer comes first
			}
			if name, ok := stringArg(call, i); ok {
				long[name] = true
				if sh, ok := stringArg(call, i+1); ok && m[3] != "" && sh != "" {
					short[sh] = true
				}
			}
			return true
		})
	}
	// And what the measuring commands register through tables and
	// helpers, read from their flag sets.
	var sets []*pflag.FlagSet
	for _, c := range bench.Collectives {
		sets = append(sets, newFlags(c).fs)
	}
	sets = append(sets, newHealthFlags().fs, newOverlapFlags().fs, newProfileFlags().fs, newPredictFlags().fs)
	for _, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			long[f.Name] = true
			if f.Shorthand != "" {
				short[f.Shorthand] = true
			}
		})
	}
	return long, short
}

func stringArg(call *ast.CallExpr, i int) (string, bool) {
	if i >= len(call.Args) {
		return "", false
	}
	lit, ok := call.Args[i].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// libraryStrings calls visit with every string literal of the non-test Go
// files outside cmd/ and internal/ (which only tests use).
func libraryStrings(t *testing.T, visit func(pos token.Position, s string)) {
	t.Helper()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cmd" || rel == "internal" || d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		af, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					visit(fset.Position(lit.Pos()), s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// notOurs are texts outside cmd/ that spell a flag which is not a
// collbench flag, each with why.
var notOurs = map[string]string{
	"ulimit -n":           "the shell's limit on open files",
	"# Blocking Enabled:": "nccl-tests' own header line, printed as nccl-tests prints it",
}

var flagToken = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])(--[a-z][a-z0-9-]*[a-z0-9]|-[A-Za-z])(?:[^A-Za-z0-9_-]|$)`)

// No library spells a flag of the command line: they name settings
// ({Name}, package setting) and the command line says them as its flags.
func TestNoFlagSpelledOutsideCmd(t *testing.T) {
	long, short := ourFlags(t)
	if len(long) < 100 || len(short) < 25 {
		t.Fatalf("read %d flags and %d shorthands from the command's source; the scan is broken", len(long), len(short))
	}
	libraryStrings(t, func(pos token.Position, s string) {
		for why := range notOurs {
			if strings.Contains(s, why) {
				return
			}
		}
		for _, m := range flagToken.FindAllStringSubmatch(s, -1) {
			f := m[1]
			if (strings.HasPrefix(f, "--") && long[f[2:]]) || (!strings.HasPrefix(f, "--") && short[f[1:]]) {
				t.Errorf("%s: %q spells the flag %s", pos, s, f)
			}
		}
	})
}

var settingMark = regexp.MustCompile(`\{([A-Z][A-Za-z0-9]*)\}`)

// Every setting a library names has its flag here, and every spelling
// is a flag the command line registers.
func TestEverySettingHasItsFlag(t *testing.T) {
	long, short := ourFlags(t)
	for name := range settingFlags {
		for _, f := range spellings(name) {
			if !(strings.HasPrefix(f, "--") && long[f[2:]]) && !(len(f) == 2 && short[f[1:]]) {
				t.Errorf("setting %s is spelled %s, which is no flag of the command line", name, f)
			}
		}
	}
	named := 0
	libraryStrings(t, func(pos token.Position, s string) {
		for _, m := range settingMark.FindAllStringSubmatch(s, -1) {
			named++
			if _, ok := settingFlags[m[1]]; !ok {
				t.Errorf("%s: %q names the setting %s, which has no flag in settingFlags", pos, s, m[1])
			}
		}
	})
	if named < 100 {
		t.Errorf("found %d settings named in the libraries' messages; the scan is broken", named)
	}
}
