// Package ab measures one sweep under several arms, two NCCL builds or
// settings, side by side: each arm runs in processes of its own, so that
// each loads its own library and reads its own environment, and the arms
// take turns round after round, so that a machine's drift over minutes
// falls on every arm alike. It emits each round's run as it ends; the
// judgement is compare's, the table report's.
package ab

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/libpath"
)

// Arm is one way of running the sweep.
type Arm struct {
	Label string   // how tables name it: name=, else the spec itself
	Spec  string   // as given
	Lib   string   // libnccl file or folder to load (COLLBENCH_NCCL_LIB); empty: as found
	Env   []string // NAME=VALUE settings added to the environment
	Args  []string // collbench flags added to the sweep's
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jobVars are the variables that place a process in a job (the
// launchers', the rendezvous', the token): ab sets them for every arm
// process, and an arm that set them would join another job or none.
var jobVars = append(cluster.Vars(), cluster.ListenerFDVar, cluster.HeldVar)

// ParseArm reads an arm: words separated by spaces (quotes keep spaces
// inside a word), each name=LABEL, lib=PATH or NAME=VALUE (an environment
// setting), and from the first word that begins with '-' on, collbench
// flags. An empty spec is the sweep as it is.
func ParseArm(spec string) (Arm, error) {
	if strings.ContainsFunc(spec, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\n' }) {
		return Arm{}, fmt.Errorf("arm %q holds a control character (tables and lines print an arm as given)", spec)
	}
	words, err := splitWords(spec)
	if err != nil {
		return Arm{}, fmt.Errorf("arm %q: %w", spec, err)
	}
	a := Arm{Spec: strings.TrimSpace(spec)}
	for i, w := range words {
		if strings.HasPrefix(w, "-") {
			a.Args = append([]string(nil), words[i:]...)
			break
		}
		key, val, ok := strings.Cut(w, "=")
		switch {
		case !ok:
			return Arm{}, fmt.Errorf("arm %q: %q is neither name=, lib=, NAME=VALUE nor a flag", spec, w)
		case key == "name":
			if val == "" {
				return Arm{}, fmt.Errorf("arm %q: an empty name", spec)
			}
			a.Label = val
		case key == "lib" || key == libpath.NCCL.EnvVar: // the variable is lib= by another name: probed alike
			if val == "" {
				return Arm{}, fmt.Errorf("arm %q: %s= names no file", spec, key)
			}
			a.Lib = val
		case slices.Contains(jobVars, key):
			return Arm{}, fmt.Errorf("arm %q: %s is the job's: ab places every arm's processes in a job of their own", spec, key)
		case envName.MatchString(key):
			a.Env = append(a.Env, w)
		default:
			return Arm{}, fmt.Errorf("arm %q: %q is not an environment variable's name", spec, key)
		}
	}
	if a.Label == "" {
		a.Label = a.describe()
	}
	return a, nil
}

// describe is the arm's spec without its name: what it changes.
func (a Arm) describe() string {
	var parts []string
	if a.Lib != "" {
		parts = append(parts, "lib="+a.Lib)
	}
	parts = append(parts, a.Env...)
	parts = append(parts, a.Args...)
	if len(parts) == 0 {
		return "as is"
	}
	return strings.Join(parts, " ")
}

// Changes says what the arm changes, whatever its label.
func (a Arm) Changes() string { return a.describe() }

// MaxArms bounds the arms of one run: each runs once a round, in a
// process of its own.
const MaxArms = 512

// MatrixSize is how many arms Matrix would make of dims, counted without
// making them (capped past MaxArms): a grid of several long dimensions
// grows past what could ever run before it is built.
func MatrixSize(dims []string) (int, error) {
	n := 1
	for _, d := range dims {
		_, vals, ok := strings.Cut(strings.TrimSpace(d), "=")
		if !ok || vals == "" {
			return 0, fmt.Errorf("matrix dimension %q: want NAME=VALUE1,VALUE2,…", d)
		}
		n = min(n*(strings.Count(vals, ",")+1), MaxArms+1)
	}
	if len(dims) == 0 {
		return 0, nil
	}
	return n, nil
}

// Matrix expands dimensions, each NAME=V1,V2,… (an environment variable
// or lib), into every combination, the first dimension varying slowest.
func Matrix(dims []string) ([]Arm, error) {
	if n, err := MatrixSize(dims); err != nil {
		return nil, err
	} else if n > MaxArms {
		return nil, fmt.Errorf("the matrix makes more than %d arms, each run once a round", MaxArms)
	}
	arms := []Arm{{}}
	for _, d := range dims {
		if strings.ContainsFunc(d, unicode.IsControl) {
			return nil, fmt.Errorf("matrix dimension %q holds a control character", d)
		}
		key, vals, ok := strings.Cut(strings.TrimSpace(d), "=")
		if !ok || vals == "" {
			return nil, fmt.Errorf("matrix dimension %q: want NAME=VALUE1,VALUE2,…", d)
		}
		if key != "lib" && !envName.MatchString(key) {
			return nil, fmt.Errorf("matrix dimension %q: %q is neither lib nor an environment variable's name", d, key)
		}
		if slices.Contains(jobVars, key) {
			return nil, fmt.Errorf("matrix dimension %q: %s is the job's: ab places every arm's processes in a job of their own", d, key)
		}
		if key == libpath.NCCL.EnvVar {
			key = "lib"
		}
		var next []Arm
		for _, a := range arms {
			for _, v := range strings.Split(vals, ",") {
				if v == "" {
					return nil, fmt.Errorf("matrix dimension %q: an empty value", d)
				}
				b := a
				b.Env = append([]string(nil), a.Env...)
				if key == "lib" {
					b.Lib = v
				} else {
					b.Env = append(b.Env, key+"="+v)
				}
				next = append(next, b)
			}
		}
		arms = next
	}
	for i := range arms {
		arms[i].Label = arms[i].describe()
		arms[i].Spec = arms[i].Label
	}
	return arms, nil
}

// splitWords splits at unquoted spaces; '…' and "…" keep what they
// enclose as it is, without the quotes.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("an unclosed %c", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
