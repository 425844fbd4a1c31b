package cluster

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestDiffer(t *testing.T) {
	ours := []Setting{{"version", "1.2"}, {"-b", "1K"}, {"--racks", "sha256:aa"}}
	for _, tc := range []struct {
		theirs []Setting
		want   string
	}{
		{ours, ""},
		{[]Setting{{"--racks", "sha256:aa"}, {"-b", "1K"}, {"version", "1.2"}}, ""}, // order aside
		{[]Setting{{"version", "1.2"}, {"-b", "2K"}, {"--racks", "sha256:aa"}}, "rank 3 was started with -b 2K, rank 0 with 1K"},
		{nil, "rank 3 was started without version, which rank 0 has as 1.2"},
		{append(ours[:3:3], Setting{"-x", "1"}), "rank 3 was started with -x 1, which rank 0 has not"},
		{[]Setting{{"version", "1.2"}, {"-b", "1K\n2"}, {"--racks", "sha256:aa"}}, `rank 3 was started with -b "1K\n2", rank 0 with 1K`},
	} {
		if got := differ(3, tc.theirs, ours); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.theirs, got, tc.want)
		}
	}
}

// A rank whose settings differ from rank 0's ends the job at its hello:
// it and every rank already there learn why, as ErrSettingsDiffer; a
// hello without settings (an older release) differs from any.
func TestStoreRefusesOtherSettings(t *testing.T) {
	for _, theirs := range [][]Setting{{{"-n", "3"}}, nil} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ours := []Setting{{"-n", "2"}}
		s := Serve(ln, StoreConfig{Token: "t", Size: 3, Settings: ours})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c0, err := Dial(ctx, ln.Addr().String(), DialConfig{Token: "t", Rank: 0, Size: 3, Settings: ours})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Dial(ctx, ln.Addr().String(), DialConfig{Token: "t", Rank: 1, Size: 3, Settings: theirs})
		if !errors.Is(err, ErrSettingsDiffer) || !strings.Contains(err.Error(), "rank 1 was started with") {
			t.Errorf("%v: the differing rank got %v", theirs, err)
		}
		_, err = c0.AllGather(ctx, []byte("x"))
		if !errors.Is(err, ErrSettingsDiffer) || !strings.Contains(err.Error(), "rank 1 was started with") {
			t.Errorf("%v: rank 0 got %v", theirs, err)
		}
		// A rank arriving later learns at once that the job is over.
		c2, err := Dial(ctx, ln.Addr().String(), DialConfig{Token: "t", Rank: 2, Size: 3, Settings: ours})
		if err == nil {
			_, err = c2.AllGather(ctx, []byte("x"))
			c2.Close()
		}
		if !errors.Is(err, ErrSettingsDiffer) {
			t.Errorf("%v: a rank arriving after the refusal got %v", theirs, err)
		}
		cancel()
		c0.Close()
		s.Close()
	}
}
