// Package files is what people and agents share: uploads (whole or in resumable parts), their
// metadata, their attachment to a message, and the jobs that make thumbnails and remove what
// nobody may see any more. It owns the tables files and uploads (through its Store port) and
// the durable event file.updated; the bytes live behind the Blobs port and images are read
// through the Imager port, both implemented outside app/.
//
// A file attached to a message is exactly as visible as the message: who may read the channel
// may download it. A file never attached is its uploader's alone.
package files
