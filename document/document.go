package document

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/collbench/collbench/setting"
)

// Document is a run (-J, --format json), a profile or a health record:
// the files collbench plot and collbench report read.
type Document struct {
	Run     *Run
	Profile *Profile
	Health  *Health
}

// DecodeDocument reads a run or a profile, telling them apart by their
// schema key, with the same strict checks as DecodeRun and DecodeProfile.
func DecodeDocument(r io.Reader) (Document, error) {
	d, err := readDocument(r)
	if err != nil {
		return Document{}, err
	}
	switch d.head.Schema {
	case SchemaName:
		run, err := d.run()
		return Document{Run: run}, err
	case ProfileSchemaName:
		p, err := d.profile()
		return Document{Profile: p}, err
	case HealthSchemaName:
		h, err := d.health()
		return Document{Health: h}, err
	}
	return Document{}, fmt.Errorf("not a collbench run, profile or health record (schema %q, want %q, %q or %q)",
		d.head.Schema, SchemaName, ProfileSchemaName, HealthSchemaName)
}

// versioned is a document read whole, with the schema and version it
// says it is, so that it is read once however it is then decoded.
type versioned struct {
	data []byte
	head struct {
		Schema  string `json:"schema"`
		Version int    `json:"version"`
	}
}

func readDocument(r io.Reader) (*versioned, error) {
	d := &versioned{}
	var err error
	if d.data, err = io.ReadAll(r); err != nil {
		return nil, err
	}
	// The schema is read first, as whatever JSON it is: another tool's
	// file (a package.json with a "version" string) is not a collbench
	// document, whatever else it holds.
	var head struct {
		Schema  json.RawMessage `json:"schema"`
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(d.data, &head); err != nil {
		return nil, jsonError(d.data, err)
	}
	if json.Unmarshal(head.Schema, &d.head.Schema) != nil || d.head.Schema == "" {
		return nil, setting.Errorf("not a collbench document: no \"schema\" key names one (collbench writes them with {JSONFile}, {Output} and {Format} json)")
	}
	if !strings.HasPrefix(d.head.Schema, "collbench.") {
		return d, nil // each kind's decoder names the schemas it reads
	}
	if err := json.Unmarshal(head.Version, &d.head.Version); err != nil {
		return nil, fmt.Errorf("%s document whose \"version\" is not a whole number", d.head.Schema)
	}
	return d, nil
}

// decode fills v, refusing another schema or version and unknown keys.
func (d *versioned) decode(schema string, version int, what string, v any) error {
	return d.decodeSince(schema, version, version, what, v)
}

// decodeSince is decode for a schema whose versions from oldest to newest
// each add keys to the one before: a newer reader reads them all.
func (d *versioned) decodeSince(schema string, oldest, newest int, what string, v any) error {
	if d.head.Schema != schema {
		return fmt.Errorf("not a %s (schema %q, want %q)", what, d.head.Schema, schema)
	}
	if d.head.Version < oldest || d.head.Version > newest {
		if oldest == newest {
			return fmt.Errorf("%s version %d is not supported (this collbench reads version %d)", what, d.head.Version, newest)
		}
		return fmt.Errorf("%s version %d is not supported (this collbench reads versions %d to %d)", what, d.head.Version, oldest, newest)
	}
	dec := json.NewDecoder(bytes.NewReader(d.data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(d.data, err)
	}
	return nil
}

func (d *versioned) run() (*Run, error) {
	var run Run
	if err := d.decodeSince(SchemaName, 1, SchemaVersion, "collbench run", &run); err != nil {
		return nil, err
	}
	if err := run.validate(); err != nil {
		return nil, fmt.Errorf("collbench run: %w", err)
	}
	return &run, nil
}

func (d *versioned) profile() (*Profile, error) {
	var p Profile
	if err := d.decode(ProfileSchemaName, ProfileSchemaVersion, "collbench profile", &p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// writeIndented writes v as JSON indented by two spaces, as every record
// is written.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
