package bench

import (
	"errors"
	"testing"
)

// closeLog is a Comm that notes its Close and fails it when told to.
type closeLog struct {
	Comm
	closed *[]string
	name   string
	fail   error
}

func (c closeLog) Close() error { *c.closed = append(*c.closed, c.name); return c.fail }

// jointLog closes every Comm it is given itself, as a backend whose
// communicators close together does.
type jointLog struct{ closeLog }

func (j jointLog) CloseWith(others []Comm) error {
	*j.closed = append(*j.closed, "together:"+j.name)
	for _, o := range others {
		o.Close()
	}
	return nil
}

// CloseAll closes every Comm, together where the first can, else one
// after another whatever fails, returning the first failure.
func TestCloseAll(t *testing.T) {
	var got []string
	bad := errors.New("b failed")
	a, b, c := closeLog{closed: &got, name: "a"}, closeLog{closed: &got, name: "b", fail: bad}, closeLog{closed: &got, name: "c"}
	if err := CloseAll([]Comm{a, b, c}); !errors.Is(err, bad) || len(got) != 3 {
		t.Errorf("one after another: closed %v, %v", got, err)
	}
	got = nil
	if err := CloseAll([]Comm{jointLog{closeLog{closed: &got, name: "j"}}, a, c}); err != nil || len(got) != 3 || got[0] != "together:j" {
		t.Errorf("together: %v, %v", got, err)
	}
	if err := CloseAll(nil); err != nil {
		t.Errorf("nothing to close: %v", err)
	}
}
