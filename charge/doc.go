// Package charge says what each planner charges for one call of a plan,
// read from the files collbench exported for it and computed as the
// planner's own code computes it, so that a user sees, before trusting a
// plan, where a planner's time for a call is not what was measured. Each
// planner's arithmetic here is a transcription its tests pin by figures
// from running that planner's code on the same files; the formats'
// vocabulary (op names) is export's, which writes them.
package charge
