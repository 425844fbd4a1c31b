package document

import "time"

// Stamp is how every record of a measurement begins: which schema and
// version it is, which collbench wrote it on which backend, when, and
// from which command line. Embedded, its keys sit at the top level of
// the record.
type Stamp struct {
	Schema    string   `json:"schema"`
	Version   int      `json:"version"`
	Collbench string   `json:"collbench_version"`
	Backend   string   `json:"backend"`
	StartTime string   `json:"start_time"`
	EndTime   string   `json:"end_time"`
	Args      []string `json:"args"`
}

// NewStamp stamps a record of schema and version that starts now.
func NewStamp(schema string, version int, collbench, backend string, args []string) Stamp {
	return Stamp{Schema: schema, Version: version, Collbench: collbench, Backend: backend,
		StartTime: time.Now().UTC().Format(time.RFC3339), Args: args}
}

// Finish records the end time.
func (s *Stamp) Finish() { s.EndTime = time.Now().UTC().Format(time.RFC3339) }
