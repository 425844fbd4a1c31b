package tuner

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// row is a row that matches any node count, ranks, pipeOps and regBuff.
func row(coll string, lo, hi uint64, algo, proto string, ch int) Row {
	return Row{Collective: coll, MinBytes: lo, MaxBytes: hi, Algorithm: algo, Protocol: proto, Channels: ch,
		Nodes: Any, Ranks: Any, PipeOps: Any, RegBuff: Any}
}

// What the example plugin reads of a file, as its compiled code read
// each of these (TestAgainstThePlugin runs them through it where it is
// built): names it does not know read as allreduce, ring and simple;
// empty fields vanish, so the next one moves into their place; a line is
// cut at 255 characters; a field of blanks is an empty name; "-1" as a
// size is 2^64−1; a count past a long is -1.
var parseCases = []struct {
	name, file string
	want       []Row
}{
	{"eight, nine and ten fields", "allreduce,0,65536,tree,simple,2,1,-1\nbroadcast,0,32768,ring,ll128,4,2,16,1\nreduce,1024,2048,tree,simple,-1,-1,-1,-1,1\n",
		[]Row{{"allreduce", 0, 65536, "tree", "simple", 2, 1, -1, -1, -1, ""}, {"broadcast", 0, 32768, "ring", "ll128", 4, 2, 16, 1, -1, ""},
			{"reduce", 1024, 2048, "tree", "simple", -1, -1, -1, -1, 1, ""}}},
	{"comments, blank lines, blanks around fields", "# a comment\n\n  allgather , 1 ,\t2, pat ,ll , 3,1,8\n",
		[]Row{{"allgather", 1, 2, "pat", "ll", 3, 1, 8, -1, -1, ""}}},
	{"unknown names read as allreduce, ring, simple", "alltoall,0,10,tree,ll,1,1,1\nallreduce,0,10,Tree,LL,1,1,1\n",
		[]Row{row("allreduce", 0, 10, "tree", "ll", 1).with(1, 1), row("allreduce", 0, 10, "ring", "simple", 1).with(1, 1)}},
	{"an empty field vanishes", "allreduce,0,,65536,tree,simple,2,1,1\n", []Row{{"allreduce", 0, 65536, "tree", "simple", 2, 1, 1, -1, -1, ""}}},
	{"seven fields, eleven fields", "allreduce,0,1,tree,simple,1,1\nallreduce,0,1,tree,simple,1,1,1,1,1,99\n",
		[]Row{{"allreduce", 0, 1, "tree", "simple", 1, 1, 1, 1, 1, ""}}},
	{"numbers as C reads them", "reduce,abc,-1,ring,ll,12x,+3, 99999999999999999999,-7,0\n",
		[]Row{{"reduce", 0, 18446744073709551615, "ring", "ll", 12, 3, -1, -7, 0, ""}}},
	{"carriage returns stay in the last field", "allreduce,0,1,tree,simple,1,1,1\r\n", []Row{row("allreduce", 0, 1, "tree", "simple", 1).with(1, 1)}},
	// The first 255 characters end in blanks, a ninth field, read as 0;
	// "1,1" is a line of two fields, dropped.
	{"a line cut at 255", "allreduce,0,1,tree,simple,1,1,1," + strings.Repeat(" ", 230) + "1,1\n",
		[]Row{{"allreduce", 0, 1, "tree", "simple", 1, 1, 1, 0, -1, ""}}},
	{"a long comment's rest read as a row", "# " + strings.Repeat("x", 253) + "allreduce,0,1,tree,simple,1,1,1\n",
		[]Row{{"allreduce", 0, 1, "tree", "simple", 1, 1, 1, -1, -1, ""}}},
	{"a field of blanks is an empty name", "allreduce,0,1,  ,simple,1,1,1\n", []Row{{"allreduce", 0, 1, "ring", "simple", 1, 1, 1, -1, -1, ""}}},
}

func TestParseLikeThePlugin(t *testing.T) {
	for _, c := range parseCases {
		got := Parse([]byte(c.file))
		for i := range got {
			got[i].Comment = ""
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// What the plugin hands back for calls, as its compiled code did: the
// first row that matches and whose pair NCCL left usable; one channel
// where no row matches or the row has -1.
func TestApplyLikeThePlugin(t *testing.T) {
	rows := []Row{
		{"allreduce", 0, 65536, "tree", "simple", 2, 1, -1, -1, 1, ""},
		{"allreduce", 0, 65536, "ring", "simple", 4, 4, 32, 1, 0, ""},
		row("allreduce", 0, 1<<20, "ring", "ll128", -1),
		row("broadcast", 1024, 2048, "ring", "ll", 8),
	}
	treeSimpleIgnored := func(a, p string) bool { return a == "tree" && p == "simple" }
	cases := []struct {
		q    Query
		want Decision
	}{
		{Query{"allreduce", 1024, 1, 8, 1, 1, nil}, Decision{0, "tree", "simple", 2}},
		{Query{"allreduce", 1024, 4, 32, 1, 0, nil}, Decision{1, "ring", "simple", 4}},
		{Query{"allreduce", 1024, 4, 32, 2, 0, nil}, Decision{2, "ring", "ll128", 1}},
		{Query{"allreduce", 65537, 1, 8, 1, 1, nil}, Decision{2, "ring", "ll128", 1}},
		{Query{"allreduce", 1<<20 + 1, 1, 8, 1, 1, nil}, Decision{-1, "", "", 1}},
		{Query{"allreduce", 1024, 1, 8, 1, 1, treeSimpleIgnored}, Decision{2, "ring", "ll128", 1}},
		{Query{"broadcast", 1023, 1, 8, 1, 0, nil}, Decision{-1, "", "", 1}},
		{Query{"broadcast", 2048, 1, 8, 1, 0, nil}, Decision{3, "ring", "ll", 8}},
		{Query{"reduce", 2048, 1, 8, 1, 0, nil}, Decision{-1, "", "", 1}},
	}
	for _, c := range cases {
		if got := Apply(rows, c.q); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.q, got, c.want)
		}
	}
}

// Write refuses every row the plugin would read otherwise than written,
// and what it writes reads back as written.
func TestWrite(t *testing.T) {
	good := []Row{{"allreduce", 0, 4095, "ring", "ll", 2, 1, 2, Any, Any, "measured: 0.55× NCCL's own time"},
		{"allreduce", 4096, 18446744073709551615, "tree", "simple", 16, 1, 2, Any, Any, ""}}
	var b bytes.Buffer
	if err := Write(&b, Plugin, []string{"written by a test", strings.Repeat("a long header line ", 20)}, good); err != nil {
		t.Fatal(err)
	}
	got := Parse(b.Bytes())
	want := append([]Row(nil), good...)
	want[0].Comment = ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v\nfrom\n%s", got, b.String())
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if len(l) > MaxLine {
			t.Errorf("a line of %d characters: %q", len(l), l)
		}
	}
	if strict, err := ParseStrict(b.Bytes(), Plugin); err != nil || len(strict) != 2 {
		t.Errorf("the file written does not pass ParseStrict: %v", err)
	}
	bad := []struct {
		r    Row
		want string
	}{
		{row("alltoall", 0, 1, "ring", "ll", 1), `no collective "alltoall"`},
		{row("allreduce", 0, 1, "Ring", "ll", 1), `no algorithm "Ring"`},
		{row("allreduce", 0, 1, "ring", "LL", 1), `no protocol "LL"`},
		{row("allreduce", 2, 1, "ring", "ll", 1), "is empty"},
		{row("allreduce", 0, 1, "ring", "ll", Any), "takes a row without a count as one channel"},
		{row("allreduce", 0, 1, "ring", "ll", 0), "channels 0"},
		{Row{"allreduce", 0, 1, "ring", "ll", 1, 0, 1, 1, 1, ""}, "each is a count"},
		{Row{"allreduce", 0, 1, "ring", "ll", 1, 1, 1, 1, 2, ""}, "regBuff 2"},
		{Row{"allreduce", 0, 1, "ring", "ll", 1, 1, 1, 1, 1, "a\rb"}, "carriage return"},
	}
	for _, c := range bad {
		if err := Write(&bytes.Buffer{}, Plugin, nil, []Row{c.r}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
}

// ParseStrict refuses, naming the line, what the plugin would misread
// without a word.
func TestParseStrict(t *testing.T) {
	cases := []struct{ file, want string }{
		{"allreduce,0,1,ring,ll,1,1\n", "line 1 has 7 fields"},
		{"# c\nallreduce,0,,1,ring,ll,1,1,1\n", "line 2: field 3 is empty"},
		{"allreduce,0,1,ring,ll,1,1,1," + strings.Repeat(" ", 240) + "1\n", "has 269 characters"},
		{"alltoall,0,1,ring,ll,1,1,1\n", `no collective "alltoall"`},
		{"allreduce,x,1,ring,ll,1,1,1\n", `line 1: strconv.ParseUint: parsing "x"`},
		{"allreduce,0,1,ring,ll,1,1,99999999999\n", "out of range"},
		{"allreduce,0,1,ring,ll,-1,1,1\n", "one channel"},
		{"allreduce,0,1,ring,ll,1,1,1\r\n", "carriage return"},
	}
	for _, c := range cases {
		if _, err := ParseStrict([]byte(c.file), Plugin); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.file, err, c.want)
		}
	}
	rows, err := ParseStrict([]byte("# ok\n\n   \nallreduce, 0 ,1,ring,ll,1,1,1\n"), Plugin)
	if err != nil || len(rows) != 1 || rows[0] != row("allreduce", 0, 1, "ring", "ll", 1).with(1, 1) {
		t.Errorf("%+v, %v", rows, err)
	}
}

// with sets a row's nodes and ranks.
func (r Row) with(nodes, ranks int) Row { r.Nodes, r.Ranks = nodes, ranks; return r }

// Whatever the bytes, Parse does not fail; a file ParseStrict takes reads
// the same through Parse, and Write writes its rows back to the same.
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add([]byte(c.file))
	}
	f.Add([]byte("allreduce,0,4095,ring,ll,2,1,2,-1,-1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		loose := Parse(data)
		strict, err := ParseStrict(data, Plugin)
		if err != nil {
			return
		}
		if !reflect.DeepEqual(loose, strict) && !(len(loose) == 0 && len(strict) == 0) {
			t.Fatalf("ParseStrict took %+v, the plugin reads %+v", strict, loose)
		}
		var b bytes.Buffer
		if err := Write(&b, Plugin, nil, strict); err != nil {
			t.Fatalf("rows ParseStrict took do not write: %v", err)
		}
		if again := Parse(b.Bytes()); !reflect.DeepEqual(again, strict) && len(strict) > 0 {
			t.Fatalf("written and read back: %+v, want %+v", again, strict)
		}
	})
}
