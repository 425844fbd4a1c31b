package chakra

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

// sample is the trace testdata/chakra-python.et holds, written there by
// chakra's own et_def_pb2 and protolib.encodeMessage (protobuf 3.21 from
// Debian): a collective in a process group, a send after it, and a
// receive with several dependencies and a comm_size of 0.
var sample = []Node{
	{ID: 1, Name: "TP allgather", Type: CommColl, Attrs: []Attr{
		Bool("is_cpu_op", false), Int64("comm_type", int64(AllGather)), Int64("comm_size", 123456789012), String("pg_name", "3")}},
	{ID: 2, Name: "PP send", Type: CommSend, DataDeps: []uint64{1}, Attrs: []Attr{
		Bool("is_cpu_op", false), Int32("comm_src", 0), Int32("comm_dst", 2), Int32("comm_tag", -5), Int64("comm_size", 8<<20)}},
	{ID: 300, Type: CommRecv, DataDeps: []uint64{1, 2, 200}, Attrs: []Attr{
		Int32("comm_src", 2), Int32("comm_dst", 0), Int64("comm_size", 0)}},
}

// Write gives, byte for byte, what chakra's Python tools write for the
// same nodes, and Read reads it back.
func TestWriteIsChakras(t *testing.T) {
	want, err := os.ReadFile("testdata/chakra-python.et")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Write(&got, sample); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("Write:\n% x\nchakra's:\n% x", got.Bytes(), want)
	}
	version, nodes, err := Read(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	if version != Version || !reflect.DeepEqual(nodes, sample) {
		t.Errorf("Read: %s %+v\nwant %+v", version, nodes, sample)
	}
	if a, ok := nodes[1].Attr("comm_tag"); !ok || a.Int != -5 {
		t.Errorf("comm_tag %+v %v", a, ok)
	}
	if _, ok := nodes[2].Attr("pg_name"); ok {
		t.Error("a receive with no pg_name has one")
	}
}

func TestReadRefusals(t *testing.T) {
	good, err := os.ReadFile("testdata/chakra-python.et")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "no metadata"},
		{"cut", good[:len(good)-3], "ends early"},
		{"huge", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, "longer than any trace"},
		{"bad field", append(append([]byte{}, good[:8]...), 2, 0x0b, 0x00), "wire type 3"},
	} {
		if _, _, err := Read(bytes.NewReader(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func FuzzRead(f *testing.F) {
	good, err := os.ReadFile("testdata/chakra-python.et")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, nodes, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// What reads back writes and reads back the same.
		var b bytes.Buffer
		if err := Write(&b, nodes); err != nil {
			t.Fatal(err)
		}
		_, again, err := Read(&b)
		if err != nil || len(again) != len(nodes) {
			t.Fatalf("round trip: %v, %d nodes of %d", err, len(again), len(nodes))
		}
	})
}
