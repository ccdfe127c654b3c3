// ParallaxCalibration: target detection, mono and stereo solves on LAPACK,
// calibration file formats and reports.
import ParallaxGeometry
import ParallaxImage
