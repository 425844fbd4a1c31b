// Package report renders for people: the nccl-tests text table and its
// per-process spread, CSV, the overlap table, the fit table of a profile,
// comparisons and predictions. It formats the values it is given (the
// engine's rows, documents, comparisons) and neither measures, fits nor
// writes files.
package report
