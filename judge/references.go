package judge

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/collbench/collbench/bench"
)

// Reference is one published figure: the bus bandwidth a system of this
// kind reaches for a collective in a size band, under conditions, with
// its source.
type Reference struct {
	ID          string  `json:"id"`
	GPU         string  `json:"gpu"`  // matched against the GPU's name: "H100"
	Link        string  `json:"link"` // the intra-node link: "NVLink4", "PCIe Gen5"
	GPUsPerNode int     `json:"gpus_per_node"`
	NodesMin    int     `json:"nodes_min"`
	NodesMax    int     `json:"nodes_max"` // 0 = no upper end
	NIC         string  `json:"nic,omitempty"`
	Collective  string  `json:"collective"`
	MinBytes    int64   `json:"min_bytes"`
	MaxBytes    int64   `json:"max_bytes,omitempty"` // 0 = no upper end
	BusBW       float64 `json:"busbw_gbps"`
	Conditions  string  `json:"conditions"`
	Source      string  `json:"source"`
	Date        string  `json:"date"`
	Site        bool    `json:"-"` // from --references, not the built-in table
}

// Table is a versioned set of references.
type Table struct {
	Version int         `json:"version"`
	Updated string      `json:"updated"`
	Entries []Reference `json:"entries"`
}

// TableVersion is the version of the reference file this collbench reads.
const TableVersion = 1

//go:embed references.json
var builtin []byte

// Builtin is the table inside the binary.
func Builtin() Table {
	t, err := ReadTable(bytes.NewReader(builtin))
	if err != nil {
		panic("judge: the built-in reference table: " + err.Error()) // a test keeps this from shipping
	}
	return t
}

// ReadTable reads a reference file (the built-in one's format), refusing
// unknown keys, another version and entries that do not validate.
func ReadTable(r io.Reader) (Table, error) {
	var t Table
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("not a reference table: %w", err)
	}
	// One document and nothing after it: a second table or stray text is
	// a file put together wrongly, not something to ignore.
	if _, err := dec.Token(); err != io.EOF {
		return t, fmt.Errorf("not a reference table: something follows the table (%s)", trailing(err))
	}
	if t.Version != TableVersion {
		return t, fmt.Errorf("reference table version %d is not supported (this collbench reads version %d)", t.Version, TableVersion)
	}
	seen := map[string]bool{}
	for i, e := range t.Entries {
		if err := e.Validate(); err != nil {
			return t, fmt.Errorf("entry %d (%q): %w", i+1, e.ID, err)
		}
		if seen[e.ID] {
			return t, fmt.Errorf("entry %d: id %q is used twice", i+1, e.ID)
		}
		seen[e.ID] = true
	}
	return t, nil
}

// trailing says what followed a table: a token, or why it did not parse.
func trailing(err error) string {
	if err != nil {
		return err.Error()
	}
	return "another JSON value"
}

// Limits of an entry: a busbw no wire comes near (the fastest links of
// 2026 carry about 1.8 TB/s), and text a table prints in a column.
const (
	maxBusBW   = 100e3 // GB/s
	maxIDChars = 64
	maxText    = 1000
)

// Validate refuses an entry that could not be matched or judged by.
func (e Reference) Validate() error {
	for _, f := range []struct{ name, v string }{{"id", e.ID}, {"gpu", e.GPU}, {"link", e.Link}, {"collective", e.Collective},
		{"conditions", e.Conditions}, {"source", e.Source}, {"date", e.Date}} {
		if strings.ContainsFunc(f.v, unicode.IsControl) {
			return fmt.Errorf("%s %q holds a control character (a terminal would act on it)", f.name, f.v)
		}
		if len(f.v) > maxText {
			return fmt.Errorf("%s is %d bytes long (at most %d)", f.name, len(f.v), maxText)
		}
	}
	switch {
	case len(e.ID) > maxIDChars:
		return fmt.Errorf("id is %d bytes long (at most %d: tables print it in a column)", len(e.ID), maxIDChars)
	case e.BusBW > maxBusBW:
		return fmt.Errorf("busbw_gbps %g is beyond any wire (at most %g)", e.BusBW, float64(maxBusBW))
	case e.ID == "" || e.GPU == "" || e.Link == "" || e.Collective == "":
		return fmt.Errorf("id, gpu, link and collective are required")
	case e.Source == "":
		return fmt.Errorf("no source: every figure says where it comes from")
	case !knownCollective(e.Collective):
		return fmt.Errorf("collective %q: want one of collbench's names (%s)", e.Collective, strings.Join(collectiveNames(), ", "))
	case !(e.BusBW > 0):
		return fmt.Errorf("busbw_gbps must be above 0")
	case e.GPUsPerNode < 1 || e.NodesMin < 1 || (e.NodesMax != 0 && e.NodesMax < e.NodesMin):
		return fmt.Errorf("gpus_per_node and nodes_min must be at least 1, nodes_max 0 or at least nodes_min")
	case e.MinBytes < 0 || (e.MaxBytes != 0 && e.MaxBytes < e.MinBytes):
		return fmt.Errorf("min_bytes must be at least 0, max_bytes 0 or at least min_bytes")
	}
	return nil
}

// System is what a reference is matched against.
type System struct {
	GPU         string // the GPU's name
	Link        string // "NVLink4", from the wire limit; empty when unknown
	GPUsPerNode int
	Nodes       int
}

// SystemOf is the system a topology is matched to references as: its
// GPU, and its nodes' own link (the wire limit of one node: NVLink, PCIe,
// or the host's memory copies), which across nodes is not the job's
// bottleneck; no link when one node's has no limit.
func SystemOf(t Topology) System {
	s := System{GPUsPerNode: t.RanksPerNode, Nodes: t.Nodes}
	if len(t.GPUs) > 0 {
		s.GPU = t.GPUs[0].Name
	}
	node := t
	node.Nodes = 1
	if l, why := WireLimit(node); why == "" {
		s.Link = l.What
	}
	return s
}

// Matches returns the entries of the tables that describe this system,
// collective and size.
func Matches(tables []Table, s System, collective string, size int64) []Reference {
	var out []Reference
	for _, t := range tables {
		for _, e := range t.Entries {
			if !nameHas(s.GPU, e.GPU) || s.Link == "" || !strings.HasPrefix(s.Link, e.Link) ||
				e.GPUsPerNode != s.GPUsPerNode || s.Nodes < e.NodesMin || (e.NodesMax != 0 && s.Nodes > e.NodesMax) ||
				e.Collective != collective || size < e.MinBytes || (e.MaxBytes != 0 && size > e.MaxBytes) {
				continue
			}
			out = append(out, e)
		}
	}
	return out
}

// nameHas says whether a GPU's name has model as one of its words:
// "NVIDIA H100 80GB HBM3" is an H100, "NVIDIA GH200 480GB" is not an H200.
func nameHas(name, model string) bool {
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '-' || r == '_' }) {
		if strings.EqualFold(w, model) {
			return true
		}
	}
	return false
}

// knownCollective says whether name is a collective's own name, the one
// a run's judgement looks its figures up by (not an alias such as
// all_reduce, which would match nothing).
func knownCollective(name string) bool {
	c, err := bench.LookupCollective(name)
	return err == nil && c.Name == name
}

func collectiveNames() []string {
	names := make([]string, len(bench.Collectives))
	for i, c := range bench.Collectives {
		names[i] = c.Name
	}
	return names
}

// DistinctIDs refuses an id that two tables both use: a verdict names the
// reference it was judged by, and one name must mean one figure.
func DistinctIDs(tables []Table) error {
	seen := map[string]int{}
	for i, t := range tables {
		for _, e := range t.Entries {
			if j, ok := seen[e.ID]; ok && j != i {
				return fmt.Errorf("id %q is in two reference tables (%s and %s)", e.ID, tableName(tables, j), tableName(tables, i))
			}
			seen[e.ID] = i
		}
	}
	return nil
}

// tableName says which table i is: the built-in one comes first.
func tableName(tables []Table, i int) string {
	if i == 0 && len(tables[0].Entries) > 0 && !tables[0].Entries[0].Site {
		return "the built-in table"
	}
	return fmt.Sprintf("site table %d", i)
}
