package setting

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

var flags = map[string]string{"Iters": "-n", "GroupSize": "--group-size", "Target": "--target"}

func flag(name string) string { return flags[name] }

func TestSpell(t *testing.T) {
	inner := Errorf("{GroupSize} must divide %d", 8)
	cases := []struct {
		name      string
		err       error
		goText    string
		cmdText   string
		wrapsEOF  bool
		wrapsSelf error
	}{
		{"one setting", Errorf("iterations ({Iters}) must be at least 1 (got %d)", 0),
			"iterations (Iters) must be at least 1 (got 0)", "iterations (-n) must be at least 1 (got 0)", false, nil},
		{"two settings", Errorf("{Iters} and {Target} ask for different things"),
			"Iters and Target ask for different things", "-n and --target ask for different things", false, nil},
		{"nested setting error", Errorf("{Iters}: %w", inner),
			"Iters: GroupSize must divide 8", "-n: --group-size must divide 8", false, inner},
		{"wrapped by fmt", fmt.Errorf("sweep: %w", inner),
			"sweep: GroupSize must divide 8", "sweep: --group-size must divide 8", false, inner},
		{"joined", errors.Join(Errorf("{Iters} is 0"), Errorf("{Target} is 0")),
			"Iters is 0\nTarget is 0", "-n is 0\n--target is 0", false, nil},
		{"wraps a plain error", Errorf("reading {Target}: %w", io.EOF),
			"reading Target: EOF", "reading --target: EOF", true, nil},
		{"a mark carried by a plain error", fmt.Errorf("{Iters} too small"), "{Iters} too small", "-n too small", false, nil},
		{"wraps two", Errorf("{Iters}: %w, %w", io.EOF, inner), "Iters: EOF, GroupSize must divide 8", "-n: EOF, --group-size must divide 8", true, inner},
		{"braces that are no setting", Errorf("want {a,b} or {}"), "want {a,b} or {}", "want {a,b} or {}", false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.err.Error(); got != c.goText {
				t.Errorf("Error() = %q, want %q", got, c.goText)
			}
			if got := Spell(c.err, flag); got != c.cmdText {
				t.Errorf("Spell = %q, want %q", got, c.cmdText)
			}
			if c.wrapsEOF && !errors.Is(c.err, io.EOF) {
				t.Error("the wrapped error is lost")
			}
			if c.wrapsSelf != nil && !errors.Is(c.err, c.wrapsSelf) {
				t.Error("the wrapped setting error is lost")
			}
		})
	}
}
