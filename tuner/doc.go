// Package tuner reads and writes the files that steer a collective
// library's own choice of algorithm, protocol and channels: the CSV of
// NCCL's example tuner plugin (plugins/tuner/example in NCCL's source,
// loaded with NCCL_TUNER_PLUGIN and named by NCCL_TUNER_CONFIG_FILE), in
// which the host backend's tuner files are written too (with a
// Vocabulary of its own), and the
// measurement rows its optimize_config.py script takes. It also reads
// the decisions a library logs per call (NCCL_DEBUG_SUBSYS=TUNING).
//
// Parse is a transcription of the plugin's own parser and Apply of its
// matching, including what they do silently (an unknown name read as
// allreduce, ring or simple; a line cut at 255 characters; a call no row
// matches run on one channel), so that a file can be checked against
// what the plugin will make of it before NCCL loads it; the tests hold
// the transcription to the plugin's compiled code. Write refuses every
// row the plugin would misread. The package imports nothing of collbench.
package tuner
