package cluster

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpandNodelist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"node1", []string{"node1"}},
		{"gpu[01-03,07],login1", []string{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}},
		{"r[1-2]n[1-2]", []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{"a[8-10]", []string{"a8", "a9", "a10"}},
		{"dgx-[001-002]-ib", []string{"dgx-001-ib", "dgx-002-ib"}},
		{" h1,h2 ", []string{"h1", "h2"}},
	}
	for _, tt := range tests {
		got, err := ExpandNodelist(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %v %v, want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestExpandNodelistErrors(t *testing.T) {
	for _, in := range []string{"", "a[1-", "a]1", "a[[1]]", "a[3-1]", "a[x]", "a[1-2-3]", "a,,b", "a[0-99999999]", "n[0-999]m[0-999]"} {
		if got, err := ExpandNodelist(in); err == nil {
			t.Errorf("%q: accepted as %d host(s)", in, len(got))
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error spans lines", in)
		}
	}
}

func TestExpandTaskCounts(t *testing.T) {
	got, err := ExpandTaskCounts("4(x2),3")
	if err != nil || !reflect.DeepEqual(got, []int{4, 4, 3}) {
		t.Errorf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "4(x0)", "x", "4(x2", "-1"} {
		if _, err := ExpandTaskCounts(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzExpandNodelist: any input expands without a panic, within the host
// limit, into names free of list syntax, or is refused.
func FuzzExpandNodelist(f *testing.F) {
	for _, s := range []string{"gpu[01-03,07],login1", "r[1-2]n[1-2]", "a[", "a[1-3]b[9-10]", "x,y,z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandNodelist(s)
		if err != nil {
			return
		}
		if len(hosts) == 0 || len(hosts) > maxHosts {
			t.Fatalf("%q: %d hosts", s, len(hosts))
		}
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "[],") {
				t.Fatalf("%q: bad host %q", s, h)
			}
		}
	})
}

func FuzzExpandTaskCounts(f *testing.F) {
	for _, s := range []string{"4(x2),3", "1", "8(x16)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		counts, err := ExpandTaskCounts(s)
		if err == nil && (len(counts) == 0 || len(counts) > maxHosts) {
			t.Fatalf("%q: %d counts", s, len(counts))
		}
	})
}
