package export

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/model/profiled"
)

// aiconfiguratorOps are the collectives AIConfigurator's NCCL table
// holds, by its op names.
var aiconfiguratorOps = []struct{ name, coll string }{
	{"all_gather", "allgather"}, {"alltoall", "alltoall"}, {"reduce_scatter", "reducescatter"}, {"all_reduce", "allreduce"},
}

// AIConfiguratorOp is AIConfigurator's name for collbench's collective
// coll, "" where its NCCL table holds none.
func AIConfiguratorOp(coll string) string {
	for _, op := range aiconfiguratorOps {
		if op.coll == coll {
			return op.name
		}
	}
	return ""
}

// aiconfiguratorMin and aiconfiguratorMax bound the sizes of the rows, in
// bytes: one 2-byte element to 64 GiB, each twice the last. Its collector
// measures 512 B to 512 MiB (collect_nccl.py), but AIConfigurator charges
// a size outside its rows in proportion to the nearest row (its engine's
// boundary "util hold": a 256 B call at half the 512 B row's time), so
// the rows reach past any call a plan makes, where the curve is its fit.
const aiconfiguratorMin, aiconfiguratorMax = 2, 64 << 30

// AIConfiguratorDir is where an export puts the table current
// AIConfigurator reads, relative to the export folder: its systems/data
// layout below a system's folder (comm/nccl/<NCCL version>/), so that the
// folder comm is copied into systems/data/<system>/ whole. It is "" for a
// profile whose version or backend cannot name a folder, which an export
// of it refuses.
func AIConfiguratorDir(p *document.Profile) string {
	v, err := aiconfiguratorVersion(p)
	if err != nil {
		return ""
	}
	return filepath.Join("comm", "nccl", v)
}

// aiconfiguratorVersion names the NCCL the profile loaded, or its backend
// where it loaded none. Both come from the document, so either must be one
// plain folder name (fileio.Component).
func aiconfiguratorVersion(p *document.Profile) (string, error) {
	if v := p.Meta.NCCLVersion; v != "" {
		return v, fileio.Component("the profile's NCCL version", v)
	}
	return p.Backend, fileio.Component("the profile's backend", p.Backend)
}

// aiconfiguratorRow is one row of AIConfigurator's NCCL table, with the
// columns its collector writes, in its order; the parquet columns are
// optional as pandas writes them.
type aiconfiguratorRow struct {
	Framework    *string  `parquet:"framework,optional,dict"`
	Version      *string  `parquet:"version,optional,dict"`
	Device       *string  `parquet:"device,optional,dict"`
	OpName       *string  `parquet:"op_name,optional,dict"`
	KernelSource *string  `parquet:"kernel_source,optional,dict"`
	NCCLDtype    *string  `parquet:"nccl_dtype,optional,dict"`
	NumGPUs      *int64   `parquet:"num_gpus,optional"`
	MessageSize  *int64   `parquet:"message_size,optional"`
	Latency      *float64 `parquet:"latency,optional"` // ms
}

// aiconfiguratorPowerRow is a row with the two columns the collector
// adds when it reads power (--measure_power): the GPU's mean draw and its
// limit, in W. AIConfigurator's loaders read power (energy = power ×
// latency); a table has both on every row or neither, as a CSV loader
// reads an empty power as an error.
type aiconfiguratorPowerRow struct {
	aiconfiguratorRow
	Power      *float64 `parquet:"power,optional"`
	PowerLimit *float64 `parquet:"power_limit,optional"`
}

// aiconfiguratorFiles renders NVIDIA AIConfigurator's NCCL table twice:
// nccl_perf.parquet (with its collection_meta.yaml) where current
// releases read it, and nccl_perf.txt, the CSV its collector stages and
// releases before the parquet tables read (framework, version, device,
// op_name, kernel_source, nccl_dtype, num_gpus, message_size in elements,
// latency in ms). Each row is the curve every consumer charges, over
// consecutive groups of each size the profile measured. AIConfigurator
// charges a size between two rows by linear interpolation; the rows are
// the curve's times at sizes twice apart, which hold every size of the
// profile's own table (sizes a power of two apart), so the charge is the
// curve's own.
//
// The table is AIConfigurator's "half" one: message_size counts 2-byte
// elements of the bytes measured, whatever type the profile moved.
func aiconfiguratorFiles(p *document.Profile) ([]exportFile, error) {
	version, err := aiconfiguratorVersion(p)
	if err != nil {
		return nil, err
	}
	rows, withPower, err := aiconfiguratorRows(p)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,message_size,latency")
	if withPower {
		b.WriteString(",power,power_limit")
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s,%s,%d,%d,%s", csvField(*r.Framework), csvField(*r.Version), csvField(*r.Device),
			*r.OpName, csvField(*r.KernelSource), *r.NCCLDtype, *r.NumGPUs, *r.MessageSize,
			strconv.FormatFloat(*r.Latency, 'g', -1, 64))
		if withPower {
			fmt.Fprintf(&b, ",%s,%s", strconv.FormatFloat(*r.Power, 'g', -1, 64), strconv.FormatFloat(*r.PowerLimit, 'g', -1, 64))
		}
		b.WriteString("\n")
	}
	var pq []byte
	if withPower {
		pq, err = aiconfiguratorParquet(rows)
	} else {
		plain := make([]aiconfiguratorRow, len(rows))
		for i, r := range rows {
			plain[i] = r.aiconfiguratorRow
		}
		pq, err = aiconfiguratorParquet(plain)
	}
	if err != nil {
		return nil, err
	}
	dir := filepath.Join("comm", "nccl", version)
	return []exportFile{
		{name: filepath.Join(dir, AIConfiguratorTable), data: pq},
		{name: filepath.Join(dir, "collection_meta.yaml"), data: aiconfiguratorMeta(p, version)},
		{name: "nccl_perf.txt", data: []byte(b.String())},
	}, nil
}

// AIConfiguratorTable is the name of the table current AIConfigurator
// reads.
const AIConfiguratorTable = "nccl_perf.parquet"

// aiconfiguratorRows are the table's rows: each op, each consecutive
// group the profile measured of the halvings of the job (the whole job's
// is required), each size; withPower says every row has its power, as
// every curve the table reads has some (a profile with a power window).
func aiconfiguratorRows(p *document.Profile) (rows []aiconfiguratorPowerRow, withPower bool, err error) {
	version, device, source := p.Meta.NCCLVersion, p.Backend, "NCCL"
	if version == "" {
		version = p.Backend
	}
	if len(p.Meta.Devices) > 0 && p.Meta.Devices[0].Info != "" {
		device = p.Meta.Devices[0].Info
	}
	if p.Backend != "nccl" {
		source = "collbench-" + p.Backend
	}
	framework, dtype := "TRTLLM", "half"
	world := p.Meta.WorldSize
	withPower = true
	for _, op := range aiconfiguratorOps {
		for _, n := range halvings(world) {
			c, err := p.Curve(op.coll, n, "consecutive")
			if err != nil {
				if n == world {
					return nil, false, err
				}
				continue // a smaller group the profile left out
			}
			m, err := profiled.Curve(c)
			if err != nil {
				return nil, false, err
			}
			for s := int64(aiconfiguratorMin); s <= aiconfiguratorMax; s *= 2 {
				name, gpus, elems, ms := op.name, int64(n), s/2, m.Time(float64(s))/1e3
				r := aiconfiguratorPowerRow{aiconfiguratorRow: aiconfiguratorRow{&framework, &version, &device, &name, &source, &dtype, &gpus, &elems, &ms}}
				if pw := nearestPower(c, s); pw != nil {
					r.Power, r.PowerLimit = &pw.W, &pw.LimitW
				} else {
					withPower = false
				}
				rows = append(rows, r)
			}
		}
	}
	return rows, withPower, nil
}

// nearestPower is the power the curve measured at the size nearest to
// bytes (by ratio; the smaller of two as near), nil where it measured
// none. A GPU's draw changes little between sizes twice apart, and the
// table's rows reach far past the sizes measured.
func nearestPower(c *document.ProfileCurve, bytes int64) *document.SamplePower {
	var best *document.SamplePower
	bestD := math.Inf(1)
	for i := range c.Samples {
		s := &c.Samples[i]
		if s.Power == nil || s.Bytes <= 0 {
			continue
		}
		if d := math.Abs(math.Log2(float64(s.Bytes) / float64(bytes))); d < bestD-1e-12 {
			best, bestD = s.Power, d
		}
	}
	return best
}

// aiconfiguratorParquet writes the rows as the parquet table
// AIConfigurator's loader reads (load_nccl_parquet): strings as UTF-8
// byte arrays (dictionary-encoded), num_gpus and message_size as INT64,
// latency as DOUBLE, in version 1 data pages: the schema and pages pandas
// writes from its collector's CSV, and those of the tables it ships.
func aiconfiguratorParquet[R aiconfiguratorRow | aiconfiguratorPowerRow](rows []R) ([]byte, error) {
	var buf bytes.Buffer
	var zero R
	schema := parquet.NewSchema("schema", parquet.SchemaOf(zero))
	w := parquet.NewGenericWriter[R](&buf, schema, parquet.DataPageVersion(1))
	if _, err := w.Write(rows); err != nil {
		return nil, fmt.Errorf("writing %s: %w", AIConfiguratorTable, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", AIConfiguratorTable, err)
	}
	return buf.Bytes(), nil
}

// aiconfiguratorMeta is the collection_meta.yaml AIConfigurator expects
// beside a table (its strict provenance check refuses a version folder
// without one): the NCCL table, complete, collected.
func aiconfiguratorMeta(p *document.Profile, version string) []byte {
	return []byte(fmt.Sprintf(`# NCCL table measured by collbench (%s backend)
schema_version: 1
provenance: collected
runtime:
  framework: nccl
  version: %s
tables:
  nccl_perf:
    status: complete
`, oneLine(p.Backend), strconv.Quote(version)))
}

// oneLine is s with its control characters dropped, for a comment line:
// a backend read from a document cannot start a line of its own.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// csvField quotes a field that holds a comma, a quote or a line break,
// as Python's csv module reads it.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
