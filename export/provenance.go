package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
)

// ProvenanceFile is the file in an export folder that records, for each
// target exported into it, the profile its files were made from (its
// digest, document.Profile.Digest). Targets are exported into one folder
// at different times, from different profiles; what charges calls from
// the folder (predict --charges) holds each target to the profile it is
// asked about.
const ProvenanceFile = "collbench_exports.json"

// maxProvenance bounds the provenance file read: a line per target.
const maxProvenance = 1 << 20

// provenance is the file's contents.
type provenance struct {
	Schema  string            `json:"schema"`
	Version int               `json:"version"`
	Targets map[string]string `json:"targets"` // target → profile digest
}

const provenanceSchema = "collbench.exports"

// ReadProvenance reads dir's provenance: each target's profile digest; nil
// where the folder has none (an export older than the record, or files
// written by hand).
func ReadProvenance(dir string) (map[string]string, error) {
	data, err := fileio.ReadRegular(filepath.Join(dir, ProvenanceFile), maxProvenance)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ProvenanceFile, err)
	}
	var p provenance
	if err := json.Unmarshal(data, &p); err != nil || p.Schema != provenanceSchema {
		return nil, fmt.Errorf("%s is not a record of collbench's exports", filepath.Join(dir, ProvenanceFile))
	}
	return p.Targets, nil
}

// recordProvenance notes in dir's provenance that target's files were made
// from p, keeping the other targets' entries; the file is replaced whole.
func recordProvenance(ctx context.Context, dir, target string, p *document.Profile, keep []string) error {
	digest, err := p.Digest()
	if err != nil {
		return err
	}
	targets, err := ReadProvenance(dir)
	if err != nil {
		targets = nil // unreadable: written anew
	}
	if targets == nil {
		targets = map[string]string{}
	}
	targets[target] = digest
	path := filepath.Join(dir, ProvenanceFile)
	if err := fileio.Distinct(path, keep); err != nil {
		return err
	}
	names := make([]string, 0, len(targets))
	for t := range targets {
		names = append(names, t)
	}
	slices.Sort(names)
	fields := make([]field, len(names))
	for i, t := range names {
		fields[i] = field{t, targets[t]}
	}
	data := orderedJSON([]field{{"schema", provenanceSchema}, {"version", 1}, {"targets", fields}})
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return fileio.ReplaceEntry(path, data)
}
