// Package audit answers whether a collective gives the same bits every
// time: run to run within one communicator, in fresh processes (and so
// fresh communicators), across message sizes, and across the library's
// algorithms, protocols and channel counts. Every turn runs the sweep in
// processes of its own through ab's Runner, on inputs that show the order
// of a reduction, and keeps each rank's output of one reference call per
// case; the turns' outputs are compared element by element where they
// were written, on each process's own host, and the processes agree on
// the first difference of each comparison: the call, rank, element and
// bit, and how far apart the values are in steps of the type. Of the
// settings that repeat, the fastest is measured against the library's
// own choice in interleaved rounds, as ab measures its arms: the price of
// repeating. It spells no flag.
package audit
