// Package healthcheck measures a job's GPUs, nodes and links and judges
// them (collbench health): it plans what to measure from health's
// decisions (the rounds of pairs, the screening and its confirmation,
// the bisection), measures each wave of units at once on communicators
// split from the job's, and turns health's verdicts into the record's
// findings. It is a measurement like any other, driven by run.Drive: the
// watchdog, the hooks, telemetry and the writing of outputs are the
// driver's.
//
// A wave (wave.go) goes in steps: whether the budget still holds it,
// agreed by every process (waveFits); its communicators, the job's own
// or split from them (waveComm); one call size timed on every set at
// once, a unit far below its peers cut short after its first call
// (timeWave); the budget's bookkeeping (spend); and each unit's figure,
// the slowest of its sets (unitFigures).
package healthcheck
