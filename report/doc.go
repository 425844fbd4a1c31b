// Package report renders for people: the nccl-tests text table and its
// per-process spread, CSV, the mixture-of-experts and overlap tables, the
// fit table of a profile, comparisons, predictions and rankings, and the
// health summary. It formats the values it is given (the
// engine's rows, documents, comparisons) and neither measures, fits nor
// writes files.
package report
