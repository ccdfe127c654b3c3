// ParallaxCapture: capture devices (V4L2, simulated rig, side-by-side, recorded
// folders), the virtual stereo device and the output synchronizer.
import ParallaxGeometry
import ParallaxImage
