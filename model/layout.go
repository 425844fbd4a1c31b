package model

// LayoutOf names the profile layout whose groups are n ranks stride apart
// in a world of world ranks: stride 1 is "consecutive", stride world/n is
// "strided" (a group of the whole world is both). Any other stride is not
// a layout a profile measures: ok is false, and a caller must not time
// such a group on another layout's curve.
func LayoutOf(world, n, stride int) (layout string, ok bool) {
	switch {
	case n < 1 || world%n != 0:
		return "", false
	case stride == 1 || n == 1:
		return "consecutive", true
	case stride*n == world:
		return "strided", true
	}
	return "", false
}
