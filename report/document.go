package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Document is either a run (-J, --format json) or a profile: the two
// files collbench plot and collbench report read.
type Document struct {
	Run     *Run
	Profile *Profile
}

// DecodeDocument reads a run or a profile, telling them apart by their
// schema key, with the same strict checks as DecodeRun and DecodeProfile.
func DecodeDocument(r io.Reader) (Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Document{}, err
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Document{}, jsonError(data, err)
	}
	switch head.Schema {
	case SchemaName:
		run, err := DecodeRun(bytes.NewReader(data))
		return Document{Run: run}, err
	case ProfileSchemaName:
		p, err := DecodeProfile(bytes.NewReader(data))
		return Document{Profile: p}, err
	}
	return Document{}, fmt.Errorf("not a collbench run or profile (schema %q, want %q or %q)", head.Schema, SchemaName, ProfileSchemaName)
}
