#if BrowserViewer
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import ParallaxGeometry

/// The HTTP and WebSocket server of `parallax view`, on Hummingbird: it carries each request
/// to ``ViewerController`` and its response back, and feeds each open page's WebSocket
/// from the ``ViewerHub``.
enum ViewerServer {
    /// Serves until the task is cancelled. `announce` gets the port listened on (the
    /// system's choice for port 0) once the server is up.
    static func run(controller: ViewerController, host: String, port: Int,
                    announce: @escaping @Sendable (Int) -> Void) async throws {
        let router = Router()
        router.add(middleware: ControllerMiddleware(controller: controller))
        let sockets = Router(context: BasicWebSocketRequestContext.self)
        sockets.ws("/ws") { request, _ in
            let token = ViewerController.presentedToken(query: request.uri.queryParameters.get("token").map { String($0) },
                                                        authorization: request.headers[.authorization])
            return controller.refusal(token: token) == nil ? .upgrade([:]) : .dontUpgrade
        } onUpgrade: { inbound, outbound, _ in
            try await feed(controller.hub, inbound: inbound, outbound: outbound)
        }
        var logger = Logger(label: "parallax.view")
        logger.logLevel = .critical
        let app = Application(
            router: router,
            // A connection that sends nothing for 2 s between requests (an idle keep-alive) is
            // closed: a local viewer's page asks again at once.
            server: .viewer(webSocketRouter: sockets,
                            configuration: .init(http1: .init(idleTimeout: .seconds(2)), ws: .init(maxFrameSize: 1 << 16)),
                            controller: controller),
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in announce(channel.localAddress?.port ?? port) },
            logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }

    /// Sends a page the newest pair each time it says it has drawn the last one (text
    /// `next`), raw or rectified as it asks (`raw` / `rectified`): at most one pair in flight.
    static func feed(_ hub: ViewerHub, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let page = hub.openPage()
        defer { hub.close(page: page.id) }
        let wants = Locked((ready: true, raw: false))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Small commands only: anything longer ends the connection.
                for try await message in inbound.messages(maxSize: 256) {
                    guard case .text(let text) = message else { continue }
                    switch text {
                    case "next": wants.withLock { $0.ready = true }
                    case "raw": wants.withLock { $0.raw = true }
                    case "rectified": wants.withLock { $0.raw = false }
                    default: continue
                    }
                    hub.wake(page: page.id)
                }
            }
            group.addTask {
                var last: (number: Int, raw: Bool)?
                for await _ in page.wakeUps {
                    let (ready, raw) = wants.withLock { ($0.ready, $0.raw) }
                    guard ready else { continue }
                    let encoded: ViewerHub.EncodedPair?
                    do { encoded = try hub.encodedPair(raw: raw, after: last) } catch {
                        try await outbound.write(.text(JSONValue.object(JSONObject([("error", .string("\(error)"))])).serialized(indent: 0)))
                        wants.withLock { $0.raw = false }
                        continue
                    }
                    guard let encoded else { continue }
                    wants.withLock { $0.ready = false }
                    last = (encoded.number, encoded.raw)
                    try await outbound.writeBinaryMessage(ByteBuffer(bytes: encoded.message))
                }
            }
            // Either side ending (the page closed, the session ended) ends the page.
            try await group.next()
            group.cancelAll()
        }
    }

    /// Hummingbird's HTTP/1 and WebSocket channel with two handlers of the viewer's own:
    ///
    /// - ``UpgradeTokenGate`` after NIO's request decoder answers a WebSocket upgrade without
    ///   the token with the controller's 401, or 403 for a wrong one, and closes: Hummingbird
    ///   answers every upgrade it does not make with a bare 400.
    /// - ``CloseOnParserError`` at the end of the pipeline closes the connection when NIO's
    ///   parser refuses a request (a NUL in the request line, an unknown HTTP version, a line
    ///   or header past the decoder's limits). Hummingbird turns NIO's own error handling off
    ///   and, while a connection still waits to see whether it will be upgraded, nothing else
    ///   acts on such bytes: the connection stayed open with nothing said. (NIO's error
    ///   handler, which would answer 400, watches what is written back and cannot stay on a
    ///   connection upgraded to a WebSocket; this one only reads errors.)
    struct ViewerChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
        let inner: Inner
        let controller: ViewerController

        func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
            inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
                let pipeline = channel.pipeline.syncOperations
                let decoder = try pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
                try pipeline.addHandler(UpgradeTokenGate(controller: controller), position: .after(decoder.handler))
                try pipeline.addHandler(CloseOnParserError())
                return value
            }
        }

        func handle(value: Inner.Value, logger: Logger) async {
            await inner.handle(value: value, logger: logger)
        }
    }

    /// Looks at a connection's first request only, then steps out of the pipeline: a
    /// WebSocket upgrade of `/ws` that the token check refuses is answered here (the refusal's
    /// status and JSON reason) and the connection closed; anything else goes on unchanged.
    final class UpgradeTokenGate: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias InboundOut = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let controller: ViewerController
        /// Set once an upgrade is refused: the rest of that request is dropped.
        private var refused = false

        init(controller: ViewerController) { self.controller = controller }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !refused else { return }
            guard case .head(let head) = unwrapInboundIn(data) else {
                context.fireChannelRead(data)
                return
            }
            let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let upgrading = head.headers["upgrade"].contains { $0.lowercased() == "websocket" }
            if upgrading, path == "/ws", let answer = controller.refusal(token: Self.token(of: head)) {
                refused = true
                let headers = HTTPHeaders([("Content-Type", answer.contentType), ("Cache-Control", "no-store"),
                                           ("Content-Length", "\(answer.body.count)"), ("Connection", "close")])
                let status = HTTPResponseStatus(statusCode: answer.status)
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                context.close(promise: nil)
                return
            }
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }

        /// The token the request presents, read from NIO's request head as the routes read
        /// Hummingbird's (``ViewerController/presentedToken(query:authorization:)``).
        static func token(of head: HTTPRequestHead) -> String? {
            let query = head.uri.split(separator: "?", maxSplits: 1).dropFirst().first?
                .split(separator: "&").first { $0.hasPrefix("token=") }
                .map { pair -> String in
                    let value = String(pair.dropFirst("token=".count))
                    return value.removingPercentEncoding ?? value
                }
            return ViewerController.presentedToken(query: query, authorization: head.headers["authorization"].first)
        }
    }

    /// Closes the connection on an HTTP parser error that reaches the end of the pipeline;
    /// passes everything else on untouched.
    final class CloseOnParserError: ChannelInboundHandler, RemovableChannelHandler, Sendable {
        typealias InboundIn = Never

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if error is HTTPParserError {
                context.close(promise: nil)
            } else {
                context.fireErrorCaught(error)
            }
        }
    }

    /// Hands every request to the controller (the WebSocket upgrade is decided before).
    struct ControllerMiddleware: RouterMiddleware {
        typealias Context = BasicRequestContext
        let controller: ViewerController

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            let bearer = ViewerController.presentedToken(query: nil, authorization: request.headers[.authorization])
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            var body: [UInt8] = []
            // The token first: a request without it is refused before its body is read.
            var response = controller.refusal(token: query["token"] ?? bearer)
            if response == nil {
                do {
                    let collected = try await request.body.collect(upTo: ViewerController.maximumBodyBytes)
                    body = Array(collected.readableBytesView)
                } catch {
                    response = .error(413, "the body is over \(ViewerController.maximumBodyBytes) bytes")
                }
            }
            if response == nil {
                response = await controller.respond(method: request.method.rawValue, path: request.uri.path, query: query,
                                                    bearer: bearer, body: body)
            }
            let answer = response ?? .error(500, "no response")
            var headers: HTTPFields = [.contentType: answer.contentType, .cacheControl: "no-store"]
            headers[.init("X-Content-Type-Options")!] = "nosniff"
            if answer.contentType.hasPrefix("text/html") {
                headers[.init("Content-Security-Policy")!] =
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' blob: data:; connect-src 'self'"
            }
            return Response(status: HTTPResponse.Status(code: answer.status), headers: headers,
                            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
    }
}

extension HTTPServerBuilder {
    /// ``ViewerServer/ViewerChildChannel`` around Hummingbird's HTTP/1 server with WebSocket
    /// upgrades routed by `webSocketRouter`; `controller` checks the tokens.
    static func viewer<Sockets: HTTPResponderBuilder & _HB_SendableMetatype>(
        webSocketRouter: Sockets, configuration: HTTP1WebSocketUpgradeChannel.Configuration, controller: ViewerController
    ) -> HTTPServerBuilder where Sockets.Responder.Context: WebSocketRequestContext {
        let sockets = webSocketRouter.buildResponder()
        return HTTPServerBuilder { responder in
            ViewerServer.ViewerChildChannel(inner: HTTP1WebSocketUpgradeChannel(
                responder: responder, webSocketResponder: sockets, configuration: configuration), controller: controller)
        }
    }
}
#endif
