package imaging

import (
	"image"
	stddraw "image/draw"
)

// shrink answers src averaged over blocks of k×k pixels, k the largest whole factor that
// leaves it at least twice the size of tw×th; src itself when that factor is below 2. Each
// output pixel is the mean of its block (a box filter), which loses no detail the thumbnail
// could show and, unlike sampling, lets no pattern of the photo alias into stripes.
func shrink(src image.Image, tw, th int) image.Image {
	b := src.Bounds()
	k := min(b.Dx()/(2*tw), b.Dy()/(2*th))
	if k < 2 {
		return src
	}
	ow, oh := max(1, b.Dx()/k), max(1, b.Dy()/k)
	switch m := src.(type) {
	case *image.YCbCr:
		// The conversion to RGB is affine, so the means of Y, Cb and Cr give the mean colour;
		// each plane is averaged on its own grid, subsampled chroma included.
		cw, ch := chromaSize(b, m.SubsampleRatio)
		out := image.NewYCbCr(image.Rect(0, 0, ow, oh), image.YCbCrSubsampleRatio444)
		boxAverage(out.Y, m.Y, m.YStride, b.Dx(), b.Dy(), ow, oh, 1)
		boxAverage(out.Cb, m.Cb, m.CStride, cw, ch, ow, oh, 1)
		boxAverage(out.Cr, m.Cr, m.CStride, cw, ch, ow, oh, 1)
		return out
	case *image.Gray: // a black and white JPEG
		out := image.NewGray(image.Rect(0, 0, ow, oh))
		boxAverage(out.Pix, m.Pix, m.Stride, b.Dx(), b.Dy(), ow, oh, 1)
		return out
	case *image.RGBA:
		out := image.NewRGBA(image.Rect(0, 0, ow, oh))
		boxAverage(out.Pix, m.Pix, m.Stride, b.Dx(), b.Dy(), ow, oh, 4)
		return out
	default:
		// Other kinds (palettes, grey, colour with straight alpha, 16 bits) become RGBA,
		// whose alpha is premultiplied, so that averaging does not let the colour of
		// transparent pixels bleed into their neighbours.
		rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		stddraw.Draw(rgba, rgba.Bounds(), src, b.Min, stddraw.Src)
		out := image.NewRGBA(image.Rect(0, 0, ow, oh))
		boxAverage(out.Pix, rgba.Pix, rgba.Stride, b.Dx(), b.Dy(), ow, oh, 4)
		return out
	}
}

// boxAverage writes into dst (ow×oh pixels of n interleaved bytes, packed) the means of src
// (w×h pixels, rows stride bytes apart) over the blocks that split it evenly. A plane smaller
// than the output (the chroma of 4:1:1 at a small factor) repeats its pixels: every block
// holds at least one. The rows of a band of blocks are first added column by column (one
// tight loop over each row), then the columns of each block.
func boxAverage(dst, src []byte, stride, w, h, ow, oh, n int) {
	span := func(i, size, parts int) (int, int) {
		a := i * size / parts
		return a, max(a+1, (i+1)*size/parts)
	}
	xs := make([]int, 2*ow)
	for ox := range ow {
		xs[2*ox], xs[2*ox+1] = span(ox, w, ow)
	}
	columns := make([]uint64, w*n)
	for oy := range oh {
		y0, y1 := span(oy, h, oh)
		clear(columns)
		for y := y0; y < y1; y++ {
			row := src[y*stride : y*stride+w*n]
			columns := columns[:len(row)]
			for i, v := range row {
				columns[i] += uint64(v)
			}
		}
		out := dst[oy*ow*n : (oy+1)*ow*n]
		for ox := range ow {
			x0, x1 := xs[2*ox], xs[2*ox+1]
			count := uint64((x1 - x0) * (y1 - y0))
			for c := range n {
				var sum uint64
				for x := x0; x < x1; x++ {
					sum += columns[x*n+c]
				}
				out[ox*n+c] = byte((sum + count/2) / count)
			}
		}
	}
}

// chromaSize is the width and height of the chroma planes of a YCbCr image of bounds r.
func chromaSize(r image.Rectangle, ratio image.YCbCrSubsampleRatio) (int, int) {
	halfW := func() int { return (r.Max.X+1)/2 - r.Min.X/2 }
	halfH := func() int { return (r.Max.Y+1)/2 - r.Min.Y/2 }
	quarterW := func() int { return (r.Max.X+3)/4 - r.Min.X/4 }
	switch ratio {
	case image.YCbCrSubsampleRatio422:
		return halfW(), r.Dy()
	case image.YCbCrSubsampleRatio420:
		return halfW(), halfH()
	case image.YCbCrSubsampleRatio440:
		return r.Dx(), halfH()
	case image.YCbCrSubsampleRatio411:
		return quarterW(), r.Dy()
	case image.YCbCrSubsampleRatio410:
		return quarterW(), halfH()
	}
	return r.Dx(), r.Dy()
}
