import NIOCore
import NIOPosix
import NIOHTTP1
print("stub")
