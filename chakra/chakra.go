// Package chakra writes and reads Chakra execution traces, the workload
// format ASTRA-sim runs (chakra's schema/protobuf/et_def.proto): per
// rank, a GlobalMetadata message and then Node messages, each preceded by
// its length as a varint, the way chakra's protolib encodeMessage writes
// them. It knows the fields a communication trace needs and no more; the
// protobuf wire format is small enough to write by hand, which keeps the
// module free of a protobuf runtime.
package chakra

// Version is the schema version the traces declare (GlobalMetadata).
const Version = "0.0.4"

// NodeType is et_def.proto's NodeType.
type NodeType int32

// The node types a communication trace uses.
const (
	CommSend NodeType = 5
	CommRecv NodeType = 6
	CommColl NodeType = 7
)

// CommType is et_def.proto's CollectiveCommType.
type CommType int64

// The collectives ASTRA-sim simulates.
const (
	AllReduce     CommType = 0
	AllGather     CommType = 2
	AllToAll      CommType = 6
	ReduceScatter CommType = 7
)

// Attr is one AttributeProto: a name and one value of the kinds chakra's
// feeder reads (et_feeder_node.cpp): a bool, an int32, an int64 or a
// string.
type Attr struct {
	Name   string
	Kind   AttrKind
	Int    int64 // Int32 and Int64
	Bool   bool
	String string
}

// AttrKind says which of AttributeProto's values an Attr holds, by its
// field number.
type AttrKind int

// The value kinds, numbered as AttributeProto's fields.
const (
	Int32Val  AttrKind = 7
	Int64Val  AttrKind = 9
	BoolVal   AttrKind = 27
	StringVal AttrKind = 29
)

// Node is one node of a trace. DataDeps are the nodes it waits for: the
// feeder issues a node once they are done (ctrl_deps it does not read).
type Node struct {
	ID       uint64
	Name     string
	Type     NodeType
	DataDeps []uint64
	Attrs    []Attr
}

// Int64 is an int64 attribute.
func Int64(name string, v int64) Attr { return Attr{Name: name, Kind: Int64Val, Int: v} }

// Int32 is an int32 attribute.
func Int32(name string, v int32) Attr { return Attr{Name: name, Kind: Int32Val, Int: int64(v)} }

// Bool is a bool attribute.
func Bool(name string, v bool) Attr { return Attr{Name: name, Kind: BoolVal, Bool: v} }

// String is a string attribute.
func String(name, v string) Attr { return Attr{Name: name, Kind: StringVal, String: v} }

// Attr is the node's attribute of that name, if it has one.
func (n Node) Attr(name string) (Attr, bool) {
	for _, a := range n.Attrs {
		if a.Name == name {
			return a, true
		}
	}
	return Attr{}, false
}
