package imaging

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// thumbQuality is the JPEG quality of thumbnails: small files, no visible blocks at their size.
const thumbQuality = 80

// codec decodes one image type: its header alone, or the whole picture. gif's Decode answers
// the first frame of an animation.
type codec struct {
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

var codecs = map[string]codec{
	"image/jpeg": {jpeg.DecodeConfig, jpeg.Decode},
	"image/png":  {png.DecodeConfig, png.Decode},
	"image/gif":  {gif.DecodeConfig, gif.Decode},
	"image/webp": {webp.DecodeConfig, webp.Decode},
}

// Thumbnail implements files.Imager. It always writes a JPEG: golang.org/x/image decodes WebP
// but has no encoder, and a pure-Go WebP encoder is not worth a dependency for thumbnails. Any
// transparency is laid on white, as JPEG has none. A JPEG's Exif orientation is applied, so
// that the thumbnail stands as the photo is shown and its width and height are the displayed
// ones.
func (*Imager) Thumbnail(r io.Reader, contentType string, maxSide int, maxPixels int64, w io.Writer) (files.Thumb, error) {
	c, known := codecs[contentType]
	if !known {
		return files.Thumb{}, kernel.Errorf(files.CodeImageUnreadable, "no thumbnail for %s", contentType)
	}
	if maxSide < 1 {
		return files.Thumb{}, kernel.Errorf(kernel.CodeValidation, "a thumbnail needs a side of at least 1 pixel")
	}
	// The header is read first, and its bytes kept to be read again by the decoder: the size
	// it claims decides, before a pixel is allocated, whether the image may be decoded at all.
	var header bytes.Buffer
	cfg, err := c.config(io.TeeReader(r, &header))
	if err != nil {
		return files.Thumb{}, kernel.Errorf(files.CodeImageUnreadable, "the image does not decode: %v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return files.Thumb{}, kernel.Errorf(files.CodeImageUnreadable, "the image has no pixels")
	}
	orientation := 0
	if contentType == "image/jpeg" {
		orientation = jpegOrientation(header.Bytes())
	}
	if pixels := int64(cfg.Width) * int64(cfg.Height); pixels > maxPixels {
		return files.Thumb{}, kernel.Errorf(files.CodeImageTooLarge, "the image has %d×%d pixels, more than the %d a thumbnail is made of", cfg.Width, cfg.Height, maxPixels)
	}
	src, err := c.decode(io.MultiReader(&header, r))
	if err != nil {
		return files.Thumb{}, kernel.Errorf(files.CodeImageUnreadable, "the image does not decode: %v", err)
	}
	sb := src.Bounds()
	if sb.Dx() != cfg.Width || sb.Dy() != cfg.Height {
		// A GIF's first frame may be smaller than its screen; whatever the header said, the
		// pixels decide the thumbnail. They are within maxPixels: no decoder answers more
		// pixels than its header declared.
		cfg.Width, cfg.Height = sb.Dx(), sb.Dy()
	}
	tw, th := fit(cfg.Width, cfg.Height, maxSide)
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	scale(dst, src)
	// Turned after scaling, not before: the result is the same (fit is symmetric in the two
	// sides, and so are the filters), and turning a few hundred pixels a side costs next to
	// nothing, where turning the decoded photo would touch each of its megapixels once more.
	dst = orient(dst, orientation)
	tw, th = dst.Rect.Dx(), dst.Rect.Dy()
	if err := jpeg.Encode(w, dst, &jpeg.Options{Quality: thumbQuality}); err != nil {
		return files.Thumb{}, err
	}
	return files.Thumb{ContentType: "image/jpeg", Width: tw, Height: th}, nil
}

// fit answers the size of a width×height image scaled so that its long side is at most
// maxSide, keeping its proportions; a smaller image keeps its size (never enlarged).
func fit(width, height, maxSide int) (int, int) {
	long := max(width, height)
	if long <= maxSide {
		return width, height
	}
	tw := max(1, int((int64(width)*int64(maxSide)+int64(long)/2)/int64(long)))
	th := max(1, int((int64(height)*int64(maxSide)+int64(long)/2)/int64(long)))
	return tw, th
}

// scale draws src over dst (already white), resized to dst's size. A Catmull-Rom filter
// gives sharp thumbnails without moiré, but its cost grows with the source: over a 4000×3000
// photo it takes longer than the decoding. So a large source is first averaged down by
// whole blocks of pixels (shrink) to between two and four times the thumbnail, which costs
// one addition a source pixel, and Catmull-Rom does the rest on the small image.
func scale(dst *image.RGBA, src image.Image) {
	src = shrink(src, dst.Bounds().Dx(), dst.Bounds().Dy())
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Over, nil)
}
