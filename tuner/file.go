package tuner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Row is one line of a tuner file: calls of Collective from MinBytes to
// MaxBytes (both included) on communicators of Nodes nodes and Ranks
// ranks, grouped PipeOps to a group, with registered buffers or not
// (RegBuff), run with Algorithm, Protocol and Channels. -1 in Nodes,
// Ranks, PipeOps and RegBuff matches any; in Channels it leaves the count
// to the plugin, which NCCL's example plugin takes as one channel.
type Row struct {
	Collective          string
	MinBytes, MaxBytes  uint64
	Algorithm, Protocol string
	Channels            int
	Nodes, Ranks        int
	PipeOps, RegBuff    int
	// Comment, when set, is written on '#' lines just above the row
	// (the plugin skips lines that begin with '#').
	Comment string
}

// Any is the wildcard of the matching columns.
const Any = -1

// MaxLine is the longest line the example plugin reads whole: it reads
// with fgets into 256 bytes, so a longer line is cut there and its rest
// read as a line of its own.
const MaxLine = 255

// Header names the columns, as a comment line the plugin skips.
const Header = "# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff"

// Line is the row as the file holds it.
func (r Row) Line() string {
	return fmt.Sprintf("%s,%d,%d,%s,%s,%d,%d,%d,%d,%d", r.Collective, r.MinBytes, r.MaxBytes, r.Algorithm, r.Protocol,
		r.Channels, r.Nodes, r.Ranks, r.PipeOps, r.RegBuff)
}

// Vocabulary is what a reader of tuner files understands.
type Vocabulary struct {
	Name        string // who reads the file, for messages
	Collectives []string
	Algorithms  []string
	Protocols   []string
	// Protocol, when set, checks a protocol word in place of Protocols.
	Protocol func(string) error
	// OneChannelDefault says that a row without a channel count (-1),
	// and every call no row matches, runs on one channel: NCCL's example
	// plugin sets *nChannels = 1 before it looks at its rows.
	OneChannelDefault bool
	// Loose, when set, is how the reader itself parses a file, where that
	// takes what ParseStrict refuses (the example plugin's Parse).
	Loose func([]byte) []Row
}

// Plugin is the vocabulary of NCCL's example tuner plugin (plugin.c's
// parseCollType, parseAlgorithm and parseProtocol).
var Plugin = Vocabulary{
	Name:              "NCCL's example tuner plugin",
	Collectives:       []string{"broadcast", "reduce", "allgather", "reducescatter", "allreduce"},
	Algorithms:        []string{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"},
	Protocols:         []string{"ll", "ll128", "simple"},
	OneChannelDefault: true,
}

func init() { Plugin.Loose = Parse }

// Check refuses a row the vocabulary's reader would not read as written.
func (v Vocabulary) Check(r Row) error {
	switch {
	case !slices.Contains(v.Collectives, r.Collective):
		return fmt.Errorf("%s has no collective %q (%s)", v.Name, r.Collective, strings.Join(v.Collectives, ", "))
	case !slices.Contains(v.Algorithms, r.Algorithm):
		return fmt.Errorf("%s has no algorithm %q (%s)", v.Name, r.Algorithm, strings.Join(v.Algorithms, ", "))
	case v.Protocol == nil && !slices.Contains(v.Protocols, r.Protocol):
		return fmt.Errorf("%s has no protocol %q (%s)", v.Name, r.Protocol, strings.Join(v.Protocols, ", "))
	case r.MinBytes > r.MaxBytes:
		return fmt.Errorf("a size range from %d to %d bytes is empty", r.MinBytes, r.MaxBytes)
	case r.Channels == 0 || r.Channels < Any || (v.OneChannelDefault && r.Channels == Any):
		if v.OneChannelDefault {
			return fmt.Errorf("channels %d: %s takes a row without a count as one channel; give the count", r.Channels, v.Name)
		}
		return fmt.Errorf("channels %d: want a count, or -1", r.Channels)
	case r.Nodes == 0 || r.Nodes < Any, r.Ranks == 0 || r.Ranks < Any, r.PipeOps == 0 || r.PipeOps < Any:
		return fmt.Errorf("nodes %d, ranks %d, pipeOps %d: each is a count, or -1 for any", r.Nodes, r.Ranks, r.PipeOps)
	case r.RegBuff < Any || r.RegBuff > 1:
		return fmt.Errorf("regBuff %d: want 0, 1, or -1 for either", r.RegBuff)
	case strings.ContainsAny(r.Comment, "\x00\r"):
		return errors.New("a comment with a NUL or a carriage return")
	}
	if v.Protocol != nil {
		if err := v.Protocol(r.Protocol); err != nil {
			return err
		}
	}
	if n := len(r.Line()); n > MaxLine {
		return fmt.Errorf("a line of %d characters: the plugin reads %d", n, MaxLine)
	}
	return nil
}

// Write writes the header comments, the column names and the rows, each
// checked against v, and makes sure the plugin's parser reads back
// exactly the rows written: nothing cut, merged, dropped or renamed.
func Write(w io.Writer, v Vocabulary, header []string, rows []Row) error {
	var b bytes.Buffer
	comment := func(text string) {
		for _, l := range strings.Split(text, "\n") {
			for _, part := range wrap("# "+l, MaxLine) {
				b.WriteString(part + "\n")
			}
		}
	}
	for _, h := range header {
		comment(h)
	}
	b.WriteString(Header + "\n")
	for i, r := range rows {
		if err := v.Check(r); err != nil {
			return fmt.Errorf("row %d (%s): %w", i+1, r.Line(), err)
		}
		if r.Comment != "" {
			comment(r.Comment)
		}
		b.WriteString(r.Line() + "\n")
	}
	strict, err := ParseStrict(b.Bytes(), v)
	if err != nil {
		return fmt.Errorf("%s would refuse the file written: %w", v.Name, err)
	}
	reads := [][]Row{strict}
	if v.Loose != nil {
		reads = append(reads, v.Loose(b.Bytes()))
	}
	for _, got := range reads {
		if len(got) != len(rows) {
			return fmt.Errorf("%s would read %d rows of the %d written", v.Name, len(got), len(rows))
		}
		for i := range got {
			want := rows[i]
			want.Comment = ""
			if got[i] != want {
				return fmt.Errorf("%s would read row %d as %q, not %q", v.Name, i+1, got[i].Line(), want.Line())
			}
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}

// wrap cuts a comment line into lines of at most n bytes, each a comment.
func wrap(line string, n int) []string {
	var out []string
	for len(line) > n {
		cut := strings.LastIndexByte(line[:n], ' ')
		if cut <= 2 {
			cut = n
		}
		out = append(out, line[:cut])
		line = "# " + strings.TrimLeft(line[cut:], " ")
	}
	return append(out, line)
}

// Parse reads a file as the example plugin's loadConfig does (a
// transcription of plugin.c, NCCL 2.29–2.30): lines read with fgets into
// 256 bytes, those beginning with '#' or a newline skipped, fields split
// with strtok at commas (so empty fields vanish), trimmed of spaces and
// tabs; a line of 8 to 10 fields is a row, its names read with strcmp
// (an unknown collective is allreduce, an unknown algorithm ring, an
// unknown protocol simple), its sizes with strtoull and its counts with
// atoi; numPipeOps and regBuff are -1 when absent. A line the plugin
// drops is dropped here too, without a word, as the plugin does.
func Parse(data []byte) []Row {
	var rows []Row
	for _, line := range fgetsLines(data) {
		if line[0] == '#' || line[0] == '\n' {
			continue
		}
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if i := bytes.IndexByte(line, 0); i >= 0 { // a C string ends at its NUL
			line = line[:i]
		}
		tokens := strtok(string(line))
		if len(tokens) < 8 || len(tokens) > 10 {
			continue
		}
		r := Row{
			Collective: pick(tokens[0], Plugin.Collectives, "allreduce"),
			MinBytes:   strtoull(tokens[1]),
			MaxBytes:   strtoull(tokens[2]),
			Algorithm:  pick(tokens[3], Plugin.Algorithms, "ring"),
			Protocol:   pick(tokens[4], Plugin.Protocols, "simple"),
			Channels:   atoi(tokens[5]),
			Nodes:      atoi(tokens[6]),
			Ranks:      atoi(tokens[7]),
			PipeOps:    Any,
			RegBuff:    Any,
		}
		if len(tokens) >= 9 {
			r.PipeOps = atoi(tokens[8])
		}
		if len(tokens) == 10 {
			r.RegBuff = atoi(tokens[9])
		}
		rows = append(rows, r)
	}
	return rows
}

// fgetsLines splits data as repeated fgets(line, 256, file) calls do:
// each piece ends after a newline or at 255 bytes, whichever comes first.
func fgetsLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		n := min(len(data), MaxLine)
		if i := bytes.IndexByte(data[:n], '\n'); i >= 0 {
			n = i + 1
		}
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// strtok splits at commas, dropping empty tokens, keeps at most ten, and
// trims each of leading and trailing spaces and tabs (a token of blanks
// becomes empty but stays).
func strtok(line string) []string {
	var out []string
	for _, t := range strings.Split(line, ",") {
		if t == "" {
			continue
		}
		if len(out) == 10 {
			break
		}
		out = append(out, strings.Trim(t, " \t"))
	}
	return out
}

// pick is the plugin's strcmp chain: the word if it is one of names,
// else what the plugin falls back to.
func pick(word string, names []string, fallback string) string {
	if slices.Contains(names, word) {
		return word
	}
	return fallback
}

// cSpace is C's isspace.
func cSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// cNumber reads what strtol and strtoull read: leading white space, a
// sign, decimal digits. It returns the digits' value (saturated at
// 2^64−1, overflow true past it), the sign, and whether a digit came.
func cNumber(s string) (v uint64, neg, overflow, any bool) {
	i := 0
	for i < len(s) && cSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		any = true
		d := uint64(s[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			overflow = true
			v = math.MaxUint64
			continue
		}
		if !overflow {
			v = v*10 + d
		}
	}
	return v, neg, overflow, any
}

// strtoull is C's strtoull(s, NULL, 10): a minus sign negates modulo 2^64
// ("-1" is 2^64−1), an overflow saturates, no digits read 0.
func strtoull(s string) uint64 {
	v, neg, overflow, _ := cNumber(s)
	switch {
	case overflow:
		return math.MaxUint64
	case neg:
		return -v
	}
	return v
}

// atoi is glibc's atoi: (int) strtol(s, NULL, 10), strtol saturating at
// the 64-bit long's limits, the cast keeping the low 32 bits.
func atoi(s string) int {
	v, neg, overflow, _ := cNumber(s)
	var l int64
	switch {
	case !neg && (overflow || v > math.MaxInt64):
		l = math.MaxInt64
	case neg && (overflow || v > 1<<63):
		l = math.MinInt64
	case neg:
		l = -int64(v)
	default:
		l = int64(v)
	}
	return int(int32(l))
}

// ParseStrict reads a file a reader of vocabulary v reads, and refuses in
// one error, naming the line, what the plugin would misread without a
// word: a line over MaxLine characters, an empty field, too few or too
// many fields, an unknown name, a number that is not one, a row v's
// reader would not take as written.
func ParseStrict(data []byte, v Vocabulary) ([]Row, error) {
	var rows []Row
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, line := range lines {
		n := i + 1
		if len(line) > MaxLine {
			return nil, fmt.Errorf("line %d has %d characters; %s reads %d and takes the rest for another line", n, len(line), v.Name, MaxLine)
		}
		if strings.TrimSpace(line) == "" || line[0] == '#' {
			continue
		}
		if strings.ContainsAny(line, "\x00\r") {
			return nil, fmt.Errorf("line %d holds a NUL or a carriage return", n)
		}
		fields := strings.Split(line, ",")
		if len(fields) < 8 || len(fields) > 10 {
			return nil, fmt.Errorf("line %d has %d fields; a row has 8 to 10 (collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]])", n, len(fields))
		}
		for i := range fields {
			fields[i] = strings.Trim(fields[i], " \t")
			if fields[i] == "" {
				return nil, fmt.Errorf("line %d: field %d is empty (the plugin drops an empty field and reads the next one in its place)", n, i+1)
			}
		}
		r := Row{Collective: fields[0], Algorithm: fields[3], Protocol: fields[4], PipeOps: Any, RegBuff: Any}
		var err error
		if r.MinBytes, err = strconv.ParseUint(fields[1], 10, 64); err == nil {
			r.MaxBytes, err = strconv.ParseUint(fields[2], 10, 64)
		}
		counts := []*int{&r.Channels, &r.Nodes, &r.Ranks, &r.PipeOps, &r.RegBuff}
		for i := 5; err == nil && i < len(fields); i++ {
			*counts[i-5], err = strconv.Atoi(fields[i])
			if err == nil && (*counts[i-5] < math.MinInt32 || *counts[i-5] > math.MaxInt32) {
				err = fmt.Errorf("%s is out of range", fields[i])
			}
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if err := v.Check(r); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Query is one call as the plugin's getCollInfo is asked about it, on a
// communicator of Nodes nodes and Ranks ranks.
type Query struct {
	Collective       string
	Bytes            uint64
	Nodes, Ranks     int
	PipeOps, RegBuff int
	// Ignored says which algorithm and protocol NCCL marked unusable for
	// the call (NCCL_ALGO_PROTO_IGNORE in its cost table); nil: none.
	Ignored func(algorithm, protocol string) bool
}

// Decision is what the plugin hands back: the row it applied (-1: none),
// the algorithm and protocol it made cheapest (empty: NCCL's own), and
// the channels it returned.
type Decision struct {
	Row                 int
	Algorithm, Protocol string
	Channels            int
}

// Apply is the example plugin's getCollInfo (a transcription): the
// channels start at one; the first row whose collective, size range,
// nodes, ranks, pipeOps and regBuff match, and whose algorithm and
// protocol NCCL did not mark unusable, sets them cheapest and, unless its
// count is -1, the channels. A row whose pair is unusable is passed over
// for the next.
func Apply(rows []Row, q Query) Decision {
	d := Decision{Row: -1, Channels: 1}
	match := func(want, got int) bool { return want == Any || want == got }
	for i, r := range rows {
		if r.Collective != q.Collective || q.Bytes < r.MinBytes || q.Bytes > r.MaxBytes || !match(r.Nodes, q.Nodes) ||
			!match(r.Ranks, q.Ranks) || !match(r.PipeOps, q.PipeOps) || !match(r.RegBuff, q.RegBuff) {
			continue
		}
		if q.Ignored != nil && q.Ignored(r.Algorithm, r.Protocol) {
			continue
		}
		d.Row, d.Algorithm, d.Protocol = i, r.Algorithm, r.Protocol
		if r.Channels != Any {
			d.Channels = r.Channels
		}
		return d
	}
	return d
}

// Measured is one measured setting at one size, a row of the CSV NCCL's
// optimize_config.py reads (plugins/tuner/example/scripts).
type Measured struct {
	Collective  string
	Bytes       uint64
	Choice      Choice
	Nodes       int
	Ranks       int
	CostMetric  float64 // lower is better; collbench writes the time ÷ the library's own
	BandwidthGB float64 // bus bandwidth, GB/s
	LatencyUS   float64 // time per call, µs
}

// MeasuredHeader is that CSV's header line.
const MeasuredHeader = "collective,size_bytes,algorithm,protocol,channels,nodes,ranks,pipeOps,regBuff,cost_metric,bandwidth_gbps,latency_us"

// WriteMeasured writes the rows under MeasuredHeader, numbers in their
// shortest form, pipeOps and regBuff as -1 (any).
func WriteMeasured(w io.Writer, rows []Measured) error {
	var b bytes.Buffer
	b.WriteString(MeasuredHeader + "\n")
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, m := range rows {
		fmt.Fprintf(&b, "%s,%d,%s,%s,%d,%d,%d,-1,-1,%s,%s,%s\n", m.Collective, m.Bytes, m.Choice.Algorithm, m.Choice.Protocol,
			m.Choice.Channels, m.Nodes, m.Ranks, f(m.CostMetric), f(m.BandwidthGB), f(m.LatencyUS))
	}
	_, err := w.Write(b.Bytes())
	return err
}
