// ParallaxTestSupport: the virtual UVC driver behind the V4L2 syscall seam and
// other fixtures for testing code that uses Parallax without hardware.
import ParallaxCapture
