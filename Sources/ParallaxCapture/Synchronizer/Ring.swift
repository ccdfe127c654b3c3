/// A first-in first-out queue with a fixed capacity, allocated once.
///
/// The synchronizer keeps its waiting frames, its events and the clock samples in these so
/// that nothing is allocated per frame once it runs. A value type, mutated in place through
/// its owner, so that accesses are checked for exclusivity at compile time and not per call.
@usableFromInline
struct Ring<Element> {
    @usableFromInline var storage: [Element?]
    @usableFromInline var head = 0
    @usableFromInline var count = 0

    /// Creates an empty ring that holds at most `capacity` (≥ 1) elements.
    @usableFromInline
    init(capacity: Int) {
        precondition(capacity >= 1, "Ring capacity must be at least 1")
        storage = Array(repeating: nil, count: capacity)
    }

    @inlinable var capacity: Int { storage.count }
    @inlinable var isEmpty: Bool { count == 0 }
    @inlinable var isFull: Bool { count == storage.count }

    /// The element `offset` places after the oldest one (0 is the oldest).
    @inlinable
    subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < count, "Ring index out of range")
        var index = head + offset
        if index >= storage.count { index -= storage.count }
        // Every slot between head and head + count holds a value: appended, not yet removed.
        return storage[index].unsafelyUnwrapped
    }

    /// Replaces the element `offset` places after the oldest one.
    @inlinable
    mutating func replace(at offset: Int, with element: Element) {
        precondition(offset >= 0 && offset < count, "Ring index out of range")
        var index = head + offset
        if index >= storage.count { index -= storage.count }
        storage[index] = element
    }

    @inlinable var first: Element? { count == 0 ? nil : self[0] }
    @inlinable var last: Element? { count == 0 ? nil : self[count - 1] }

    /// Appends at the back. The caller makes room first: appending to a full ring is a
    /// programmer error.
    @inlinable
    mutating func append(_ element: Element) {
        precondition(count < storage.count, "Ring overflow: make room before appending")
        var index = head + count
        if index >= storage.count { index -= storage.count }
        storage[index] = element
        count += 1
    }

    /// Removes and returns the oldest element, or `nil` when empty.
    @inlinable
    @discardableResult
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head].take()
        head += 1
        if head == storage.count { head = 0 }
        count -= 1
        return element
    }

    /// Doubles the capacity, keeping the elements in order (for queues allowed to grow; the
    /// only allocation a ring makes after its creation).
    @inlinable
    mutating func grow() {
        var larger: [Element?] = Array(repeating: nil, count: storage.count * 2)
        for offset in 0..<count { larger[offset] = self[offset] }
        storage = larger
        head = 0
    }

    @inlinable
    mutating func removeAll() {
        while popFirst() != nil {}
    }
}
