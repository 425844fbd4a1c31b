// Package schemacheck validates documents against the JSON Schemas in
// docs/, for tests.
package schemacheck

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validate checks doc against the schema file at path.
func Validate(path string, doc []byte) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile(abs)
	if err != nil {
		return fmt.Errorf("compiling %s: %w", path, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return schema.Validate(v)
}
