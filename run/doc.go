// Package run runs collbench's measurements as jobs: it finds this
// process's place among the job's processes (from any launcher's
// environment), joins or hosts the rendezvous, picks the backend and
// opens the communicators, watches for lost ranks and deadlines, and
// drives the engine through a sweep (Sweep), a mixture-of-experts layer
// (MoE), an overlap experiment (Overlap), a calibration profile (Profile)
// or a health check (Health), gathering the results into documents.
// Requests (JobRequest, SweepRequest, TrafficRequest, OverlapRequest,
// ProfileRequest, HealthRequest) state a run in a person's terms and are
// checked here, with the command line's words, into Settings and specs.
// It prints nothing: callers hear of progress through hooks and render the
// results themselves (Diagnosis.WriteText renders to the writer given), so
// a Go program can run any of these without the command line.
package run
