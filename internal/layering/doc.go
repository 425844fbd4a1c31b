// Package layering holds the test that keeps collbench's imports running
// one way: no package reaches, through others, back into its own folder's
// tree, and docs/architecture.md's list of who imports whom is the one
// `go list` reports. It has no code of its own.
package layering
