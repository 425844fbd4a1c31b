// Package document defines collbench's saved files: a run (-J and
// --format json), a mixture-of-experts run, an overlap run, a profile and
// a health record. Each is a versioned
// schema of its own types, so the files keep their shape whatever the
// engine calls its fields; the constructors here convert the engine's
// values into them. It encodes and decodes the documents and checks what it
// reads; rendering them is report's job, and planner formats are export's.
package document
