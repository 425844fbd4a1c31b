// Package numeric describes the element types and reduction operators that
// collectives move and combine, with the arithmetic the host backend and the
// verification code share: encodings of the low-precision floats (fp16, bf16,
// fp8), element-wise reduction kernels, and the exactness limits that let a
// data pattern be summed in any order with a predictable result.
package numeric
