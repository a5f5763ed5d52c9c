import Foundation
import LiveBusCLI

exit(LivebusCommand.run(Array(CommandLine.arguments.dropFirst())))
