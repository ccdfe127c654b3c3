/// A first-in first-out queue with a fixed capacity, allocated once.
///
/// The synchronizer keeps its waiting frames, its output pairs and the clock samples in
/// these so that nothing is allocated per frame once it runs. A class, so that the storage
/// is never copied (and never copied-on-write) by accident.
final class FrameRing<Element> {
    private var storage: [Element?]
    private var head = 0
    private(set) var count = 0

    /// Creates an empty ring that holds at most `capacity` (≥ 1) elements.
    init(capacity: Int) {
        precondition(capacity >= 1, "FrameRing capacity must be at least 1")
        storage = Array(repeating: nil, count: capacity)
    }

    var capacity: Int { storage.count }
    var isEmpty: Bool { count == 0 }
    var isFull: Bool { count == storage.count }

    /// The element `offset` places after the oldest one (0 is the oldest).
    @inline(__always)
    subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < count, "FrameRing index out of range")
        var index = head + offset
        if index >= storage.count { index -= storage.count }
        // Every slot between head and head + count holds a value: appended, not yet removed.
        return storage[index].unsafelyUnwrapped
    }

    var first: Element? { count == 0 ? nil : self[0] }
    var last: Element? { count == 0 ? nil : self[count - 1] }

    /// Appends at the back. The caller makes room first: appending to a full ring is a
    /// programmer error.
    @inline(__always)
    func append(_ element: Element) {
        precondition(count < storage.count, "FrameRing overflow: make room before appending")
        var index = head + count
        if index >= storage.count { index -= storage.count }
        storage[index] = element
        count += 1
    }

    /// Removes and returns the oldest element, or `nil` when empty.
    @inline(__always)
    @discardableResult
    func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head += 1
        if head == storage.count { head = 0 }
        count -= 1
        return element
    }

    func removeAll() {
        while popFirst() != nil {}
    }
}
