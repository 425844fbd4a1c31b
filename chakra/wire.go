package chakra

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Protobuf wire types.
const (
	varint    = 0
	delimited = 2
)

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field<<3|wire))
}

func appendVarint(b []byte, field int, v uint64) []byte {
	return binary.AppendUvarint(appendTag(b, field, varint), v)
}

func appendBytes(b []byte, field int, v []byte) []byte {
	b = binary.AppendUvarint(appendTag(b, field, delimited), uint64(len(v)))
	return append(b, v...)
}

func (a Attr) marshal() []byte {
	b := appendBytes(nil, 1, []byte(a.Name))
	switch a.Kind {
	case Int32Val, Int64Val:
		// Negative int32 and int64 values are both ten-byte varints of
		// the value sign-extended to 64 bits.
		b = appendVarint(b, int(a.Kind), uint64(a.Int))
	case BoolVal:
		v := uint64(0)
		if a.Bool {
			v = 1
		}
		b = appendVarint(b, int(a.Kind), v)
	case StringVal:
		b = appendBytes(b, int(a.Kind), []byte(a.String))
	}
	return b
}

func (n Node) marshal() []byte {
	var b []byte
	if n.ID != 0 {
		b = appendVarint(b, 1, n.ID)
	}
	if n.Name != "" {
		b = appendBytes(b, 2, []byte(n.Name))
	}
	if n.Type != 0 {
		b = appendVarint(b, 3, uint64(n.Type))
	}
	if len(n.DataDeps) > 0 {
		var packed []byte
		for _, d := range n.DataDeps {
			packed = binary.AppendUvarint(packed, d)
		}
		b = appendBytes(b, 5, packed)
	}
	for _, a := range n.Attrs {
		b = appendBytes(b, 10, a.marshal())
	}
	return b
}

// Write writes one rank's trace: the metadata, then the nodes.
func Write(w io.Writer, nodes []Node) error {
	bw := bufio.NewWriter(w)
	put := func(msg []byte) error {
		if _, err := bw.Write(binary.AppendUvarint(nil, uint64(len(msg)))); err != nil {
			return err
		}
		_, err := bw.Write(msg)
		return err
	}
	if err := put(appendBytes(nil, 1, []byte(Version))); err != nil {
		return err
	}
	for _, n := range nodes {
		if err := put(n.marshal()); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// maxMessage bounds one message's length, so that a corrupt prefix is an
// error rather than an allocation of its size.
const maxMessage = 64 << 20

// Read reads a trace as Write writes it (and as chakra's tools do, for
// the fields this package knows; others are skipped): its schema version
// and its nodes.
func Read(r io.Reader) (version string, nodes []Node, err error) {
	br := bufio.NewReader(r)
	next := func() ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		if n > maxMessage {
			return nil, fmt.Errorf("a message of %d bytes is longer than any trace's", n)
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(br, msg); err != nil {
			return nil, fmt.Errorf("a message ends early: %w", err)
		}
		return msg, nil
	}
	meta, err := next()
	if err != nil {
		return "", nil, fmt.Errorf("no metadata: %w", err)
	}
	err = fields(meta, func(f, _ int, v uint64, b []byte) error {
		if f == 1 {
			version = string(b)
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("metadata: %w", err)
	}
	for i := 0; ; i++ {
		msg, err := next()
		if errors.Is(err, io.EOF) {
			return version, nodes, nil
		}
		if err != nil {
			return "", nil, fmt.Errorf("node %d: %w", i, err)
		}
		n, err := unmarshalNode(msg)
		if err != nil {
			return "", nil, fmt.Errorf("node %d: %w", i, err)
		}
		nodes = append(nodes, n)
	}
}

func unmarshalNode(msg []byte) (Node, error) {
	var n Node
	err := fields(msg, func(f, wire int, v uint64, b []byte) error {
		switch {
		case f == 1 && wire == varint:
			n.ID = v
		case f == 2 && wire == delimited:
			n.Name = string(b)
		case f == 3 && wire == varint:
			n.Type = NodeType(v)
		case f == 5 && wire == varint:
			n.DataDeps = append(n.DataDeps, v)
		case f == 5 && wire == delimited:
			for len(b) > 0 {
				d, k := binary.Uvarint(b)
				if k <= 0 {
					return errors.New("a data dependency is cut short")
				}
				n.DataDeps, b = append(n.DataDeps, d), b[k:]
			}
		case f == 10 && wire == delimited:
			a, err := unmarshalAttr(b)
			if err != nil {
				return err
			}
			n.Attrs = append(n.Attrs, a)
		}
		return nil
	})
	return n, err
}

func unmarshalAttr(msg []byte) (Attr, error) {
	var a Attr
	err := fields(msg, func(f, wire int, v uint64, b []byte) error {
		switch {
		case f == 1 && wire == delimited:
			a.Name = string(b)
		case f == int(Int32Val) && wire == varint:
			a.Kind, a.Int = Int32Val, int64(int32(v))
		case f == int(Int64Val) && wire == varint:
			a.Kind, a.Int = Int64Val, int64(v)
		case f == int(BoolVal) && wire == varint:
			a.Kind, a.Bool = BoolVal, v != 0
		case f == int(StringVal) && wire == delimited:
			a.Kind, a.String = StringVal, string(b)
		}
		return nil
	})
	return a, err
}

// fields calls each with every field of a message: its number, wire type
// and value (a varint's, or a length-delimited field's bytes). Fixed-width
// fields are skipped; groups are refused.
func fields(msg []byte, each func(field, wire int, v uint64, b []byte) error) error {
	for len(msg) > 0 {
		tag, k := binary.Uvarint(msg)
		if k <= 0 {
			return errors.New("a field's tag is cut short")
		}
		msg = msg[k:]
		field, wire := int(tag>>3), int(tag&7)
		var v uint64
		var b []byte
		switch wire {
		case varint:
			if v, k = binary.Uvarint(msg); k <= 0 {
				return fmt.Errorf("field %d's value is cut short", field)
			}
			msg = msg[k:]
		case delimited:
			l, k := binary.Uvarint(msg)
			if k <= 0 || l > uint64(len(msg)-k) {
				return fmt.Errorf("field %d's bytes are cut short", field)
			}
			b, msg = msg[k:k+int(l)], msg[k+int(l):]
		case 1, 5: // fixed64, fixed32
			width := map[int]int{1: 8, 5: 4}[wire]
			if len(msg) < width {
				return fmt.Errorf("field %d's value is cut short", field)
			}
			msg = msg[width:]
			continue
		default:
			return fmt.Errorf("field %d has wire type %d, which a trace does not use", field, wire)
		}
		if err := each(field, wire, v, b); err != nil {
			return err
		}
	}
	return nil
}
