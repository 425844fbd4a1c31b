package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/golden"
)

const module = "github.com/collbench/collbench/"

// imports is every collbench package (module path cut off) and the
// collbench packages its non-test files import, from `go list`.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.Bytes())
	}
	got := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		got[name] = []string{}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				got[name] = append(got[name], strings.TrimPrefix(imp, module))
			}
		}
	}
	if len(got) < 10 {
		t.Fatalf("go list named %d packages; the module was not found", len(got))
	}
	return got
}

// tree is the folder a package's work belongs to: its top folder, or
// internal/X for what only tests use.
func tree(pkg string) string {
	parts := strings.Split(pkg, "/")
	if (parts[0] == "internal" || parts[0] == "cmd") && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// upward is a path of imports that leaves a tree and comes back into it,
// nil when there is none: a package below a folder (model/profiled) may
// import its parent, but nothing it imports may.
func upward(deps map[string][]string) []string {
	between := map[string]map[string]string{} // tree → tree → an import that joins them
	for pkg, imps := range deps {
		for _, imp := range imps {
			from, to := tree(pkg), tree(imp)
			if from == to {
				continue
			}
			if between[from] == nil {
				between[from] = map[string]string{}
			}
			if _, ok := between[from][to]; !ok || pkg+" → "+imp < between[from][to] {
				between[from][to] = pkg + " → " + imp
			}
		}
	}
	trees := make([]string, 0, len(between))
	for t := range between {
		trees = append(trees, t)
	}
	slices.Sort(trees)
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var cycle []string
	var visit func(string) bool
	visit = func(t string) bool {
		state[t] = open
		path = append(path, t)
		next := make([]string, 0, len(between[t]))
		for n := range between[t] {
			next = append(next, n)
		}
		slices.Sort(next)
		for _, n := range next {
			switch state[n] {
			case open:
				at := slices.Index(path, n)
				loop := append(slices.Clone(path[at:]), n)
				for i := 0; i+1 < len(loop); i++ {
					cycle = append(cycle, between[loop[i]][loop[i+1]])
				}
				return true
			case unseen:
				if visit(n) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[t] = done
		return false
	}
	for _, t := range trees {
		if state[t] == unseen && visit(t) {
			return cycle
		}
	}
	return nil
}

func TestNoImportRunsBackUp(t *testing.T) {
	if loop := upward(imports(t)); loop != nil {
		t.Errorf("an import runs back up: %s", strings.Join(loop, ", "))
	}
}

func TestUpwardFindsALoop(t *testing.T) {
	for _, c := range []struct {
		name string
		deps map[string][]string
		want []string
	}{
		{"downward", map[string][]string{"a": {"b", "a/x"}, "a/x": {"a", "b"}, "b": {"c"}}, nil},
		{"through a sibling", map[string][]string{"model/profiled": {"document"}, "document": {"model"}, "model": {}},
			[]string{"document → model", "model/profiled → document"}},
		{"two folders", map[string][]string{"a": {"b"}, "b/y": {"a/z"}},
			[]string{"a → b", "b/y → a/z"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := upward(c.deps); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

const (
	listStart = "<!-- imports: go test ./internal/layering -update writes this list -->\n"
	listEnd   = "<!-- end of imports -->\n"
)

// table is the imports as docs/architecture.md lists them.
func table(deps map[string][]string) string {
	pkgs := make([]string, 0, len(deps))
	for p := range deps {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	var b strings.Builder
	b.WriteString("| package | imports of collbench |\n|---|---|\n")
	for _, p := range pkgs {
		imps := slices.Clone(deps[p])
		slices.Sort(imps)
		list := "nothing"
		if len(imps) > 0 {
			list = strings.Join(imps, ", ")
		}
		fmt.Fprintf(&b, "| %s | %s |\n", p, list)
	}
	return b.String()
}

func TestArchitectureListsTheImports(t *testing.T) {
	const path = "../../docs/architecture.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start, end := strings.Index(text, listStart), strings.Index(text, listEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no list of imports between %q and %q", path, strings.TrimSpace(listStart), strings.TrimSpace(listEnd))
	}
	got, want := text[start+len(listStart):end], table(imports(t))
	if got == want {
		return
	}
	if golden.Updating() {
		text = text[:start+len(listStart)] + want + text[end:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/architecture.md's imports differ from go list's; run go test ./internal/layering -update and review the diff:\n--- go list\n%s--- docs\n%s", want, got)
}
