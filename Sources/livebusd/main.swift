import Foundation
import LiveBusCLI

exit(LivebusdCommand.run(Array(CommandLine.arguments.dropFirst())))
