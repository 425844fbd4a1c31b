// Package report renders runs for people and programs: the nccl-tests text
// table, JSON (the -J file and --format json) and CSV. It formats numbers it
// is given and knows nothing of how they were measured.
package report
