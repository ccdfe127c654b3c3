// `import Parallax` brings in every layer of the library.
@_exported import ParallaxCalibration
@_exported import ParallaxCapture
@_exported import ParallaxDepth
@_exported import ParallaxGeometry
@_exported import ParallaxImage
